// Svelte compiler options shared by the bundle (esbuild.mjs) and the type-check (`npm run typecheck:webview`, which
// reads this file because it sits beside webview/tsconfig.json).

/**
 * Keeps a compiler warning unless it is an a11y rule about interactivity on a toolkit element: <vscode-button> is
 * a focusable role=button custom element with its own keyboard handling, which Svelte cannot know.
 * @param {import('svelte/compiler').Warning} w
 * @returns {boolean} true to keep the warning
 */
export function warningFilter(w) {
  return !(/^a11y_(click_events_have_key_events|interactive_supports_focus|no_static_element_interactions)/.test(w.code) && /<vscode-/.test(w.frame ?? ''));
}

export default { compilerOptions: { warningFilter } };
