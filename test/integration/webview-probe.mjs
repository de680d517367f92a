// Lets an integration test look inside a webview (code-server route only). The test runs in the extension host and
// cannot reach the workbench page; Playwright can. The test writes <dir>/request-<n>.json {"text": "..."}; this
// finds that text inside the active webview (the frameLocator route of shared/recipes) and writes
// <dir>/response-<n>.json {"found": bool, "error": string|null}. `"where": "workbench"` looks in the workbench itself
// instead (a view such as Testing, which the extension host cannot read either); `{"click": "<css selector>"}` clicks
// that element instead of looking for text (a button inside the webview, as a user would); `{"screenshot": "<file>"}` saves
// a picture of the whole workbench there (the README's pictures of the runs view). The folder exists only while a probe serves it, so
// a test that finds no folder (the @vscode/test-electron route) knows nobody will answer.
import fs from 'node:fs';
import path from 'node:path';

/** Writes response `n` whole: under another name first, then renamed, so the test never reads half of it. */
function answer(dir, n, response) {
  const file = path.join(dir, `response-${n}.json`);
  fs.writeFileSync(`${file}.partial`, JSON.stringify(response));
  fs.renameSync(`${file}.partial`, file);
}

/** Serves requests in `dir` from `page` until the returned function is called. */
export function serveWebviewProbe(page, dir) {
  fs.mkdirSync(dir, { recursive: true });
  let stopped = false;
  const handled = new Set();
  (async () => {
    while (!stopped) {
      for (const f of fs.readdirSync(dir)) {
        const m = /^request-(\d+)\.json$/.exec(f);
        if (!m || handled.has(f)) continue;
        handled.add(f);
        let found = false;
        let error = null;
        try {
          const { text, where, click, screenshot } = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
          if (screenshot) {
            fs.mkdirSync(path.dirname(screenshot), { recursive: true });
            await page.waitForTimeout(500); // the tree's last redraw
            await page.screenshot({ path: screenshot });
            answer(dir, m[1], { found: true, error: null });
            continue;
          }
          const scope = where === 'workbench' ? page : page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
          if (click) await scope.locator(click).first().click({ timeout: 30000 });
          else await scope.getByText(text).first().waitFor({ timeout: 30000 });
          found = true;
        } catch (e) {
          error = String(e?.message || e).split('\n')[0];
        }
        answer(dir, m[1], { found, error });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return () => {
    stopped = true;
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
