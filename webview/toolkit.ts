// Registers the @vscode/webview-ui-toolkit web components the app uses (<vscode-button>, <vscode-text-field>…).
// Their styles come from --vscode-* variables: VS Code sets them in a webview; the browser host's themes.css does too.
// Not <vscode-badge>/<vscode-tag>: their template sets a style attribute, which the page's CSP (rightly) blocks.
import { provideVSCodeDesignSystem, vsCodeButton, vsCodeDropdown, vsCodeOption, vsCodeProgressRing, vsCodeTextField } from '@vscode/webview-ui-toolkit';
import { host } from './host';

provideVSCodeDesignSystem().register(vsCodeButton(), vsCodeTextField(), vsCodeDropdown(), vsCodeOption(), vsCodeProgressRing());

/**
 * The browser host: keeps the toolkit's components in the system's colour scheme. The toolkit copies the --vscode-*
 * variables into its design tokens once at load and again only when <body>'s class changes (VS Code changes it with
 * the theme; @vscode/webview-ui-toolkit utilities/theme/applyTheme.ts). In a browser those variables follow
 * `prefers-color-scheme` (themes.css), which changes no class: without this a page opened in a light scheme kept light
 * buttons after the system turned dark (and the other way round) while everything else followed. So the scheme is
 * named on <body> (`verdict-dark` / `verdict-light`), and each change of it makes the toolkit read the variables again.
 */
function followColourScheme(): void {
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const mark = () => {
    document.body.classList.toggle('verdict-dark', dark.matches);
    document.body.classList.toggle('verdict-light', !dark.matches);
  };
  mark();
  dark.addEventListener('change', mark);
}

if (host.kind === 'browser') followColourScheme();
