// Entry of the dashboard bundle (dist/webview/dashboard.js + dashboard.css).
import { mount } from 'svelte';
import './toolkit';
import './app.css';
import App from './App.svelte';
import { connect } from './store.svelte';

mount(App, { target: document.getElementById('app') as HTMLElement });
connect();

// A style or script the page's CSP blocked is a bug here: say so where tests and developers look.
document.addEventListener('securitypolicyviolation', (e) =>
  console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}:${e.columnNumber} ${e.sample}`),
);
