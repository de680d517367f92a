// Registers the @vscode/webview-ui-toolkit web components the app uses (<vscode-button>, <vscode-text-field>…).
// Their styles come from --vscode-* variables: VS Code sets them in a webview; the browser host's themes.css does too.
// Not <vscode-badge>/<vscode-tag>: their template sets a style attribute, which the page's CSP (rightly) blocks.
import { provideVSCodeDesignSystem, vsCodeButton, vsCodeDropdown, vsCodeOption, vsCodeProgressRing, vsCodeTextField } from '@vscode/webview-ui-toolkit';

provideVSCodeDesignSystem().register(vsCodeButton(), vsCodeTextField(), vsCodeDropdown(), vsCodeOption(), vsCodeProgressRing());
