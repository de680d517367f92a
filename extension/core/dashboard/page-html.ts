import crypto from 'node:crypto';

/** A fresh CSP nonce: 16 bytes from crypto.randomBytes, base64. One per page load. */
export function newNonce(): string {
  return crypto.randomBytes(16).toString('base64');
}

/** Files the build writes to dist/webview/: the app, its CSS, and the browser host's light and dark --vscode-* sets. */
export const WEBVIEW_FILES = { script: 'dashboard.js', style: 'dashboard.css', themes: 'themes.css' } as const;

/**
 * The dashboard's HTML shell for either host. `csp` is the whole Content-Security-Policy (the only script allowed
 * carries `nonce`; no 'unsafe-inline' anywhere). The nonce is also published as `<meta property="csp-nonce">`, where
 * the webview-ui-toolkit looks for it when it creates a <style> element. URLs are used as given (webview URIs, or paths relative to the
 * page). Returns the document text.
 */
export function pageHtml(opts: { csp: string; nonce: string; scriptSrc: string; styleHrefs: string[]; title: string }): string {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(opts.csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta property="csp-nonce" content="${esc(opts.nonce)}">
<link rel="icon" href="data:,">
${opts.styleHrefs.map((h) => `<link rel="stylesheet" href="${esc(h)}">`).join('\n')}
<title>${esc(opts.title)}</title>
</head>
<body>
<div id="app"></div>
<script type="module" nonce="${esc(opts.nonce)}" src="${esc(opts.scriptSrc)}"></script>
</body>
</html>
`;
}
