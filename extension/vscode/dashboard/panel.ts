import * as vscode from 'vscode';
import { newNonce, pageHtml, WEBVIEW_FILES } from '../../core/dashboard/page-html';
import { dashboardScoreboard } from '../../core/dashboard/scoreboard';
import { DashboardSession } from '../../core/dashboard/session';
import { DashboardSource, type PoolFeed } from '../../core/dashboard/source';
import { editorActions, editorRunActions } from './actions';

/** The webview panel type; also the serializer's key (package.json: activationEvents onWebviewPanel:verdict.dashboard). */
export const DASHBOARD_VIEW_TYPE = 'verdict.dashboard';

/** Messages posted to the webview and not yet taken; past this, worker output waits (it is re-read, not queued). */
const MAX_IN_FLIGHT = 100;

/** What a panel needs from the extension. */
export interface DashboardDeps {
  log: vscode.LogOutputChannel;
  /** VERDICT_HOME now (settings may change it between panels). */
  home: () => string;
  /** The worker pool of the setting `verdict.pool` (extension-wide; the runs tree shows the same). */
  pool?: PoolFeed;
}

/**
 * The dashboard in a WebviewPanel: the Svelte bundle from dist/webview under a CSP whose only script carries a
 * fresh nonce (crypto.randomBytes) and no 'unsafe-inline'; every message from the webview goes through a
 * DashboardSession, which validates it (rejected ones are logged to the Verdict output channel). Disposed with
 * its panel.
 */
export class DashboardPanel implements vscode.Disposable {
  private source!: DashboardSource;
  private session!: DashboardSession;
  private readonly subscriptions: vscode.Disposable[] = [];
  private inFlight = 0;
  private disposed = false;
  /** The records folder (VERDICT_HOME) this panel shows. */
  home = '';

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly deps: DashboardDeps,
    private readonly onDispose: () => void,
  ) {
    panel.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')] };
    this.bind();
    this.subscriptions.push(
      panel.webview.onDidReceiveMessage((m: unknown) => this.session.receive(m)),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  /**
   * Shows the records folder the settings name now: when it is not the one shown, the page is loaded again over a new
   * source (its `ready` then gets the new folder's snapshot). Returns true when it changed.
   */
  follow(): boolean {
    if (this.disposed || this.deps.home() === this.home) return false;
    this.session.dispose();
    this.source.close();
    this.bind();
    return true;
  }

  /** A source and a session on the settings' records folder, and the page (with a fresh nonce). */
  private bind(): void {
    const home = this.deps.home();
    this.home = home;
    const webview = this.panel.webview;
    const assets = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    const nonce = newNonce();
    const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src ${webview.cspSource} 'nonce-${nonce}'; img-src ${webview.cspSource} data:; font-src ${webview.cspSource}`;
    const uri = (f: string) => webview.asWebviewUri(vscode.Uri.joinPath(assets, f)).toString();
    const log = { info: (m: string) => this.deps.log.info(m), warn: (m: string) => this.deps.log.warn(m) };
    this.source = new DashboardSource(home, log, this.deps.pool ? { pool: this.deps.pool } : {});
    this.session = new DashboardSession(
      this.source,
      {
        post: (m) => {
          if (this.disposed) return;
          this.inFlight++;
          webview.postMessage(m).then(
            () => this.inFlight--,
            () => this.inFlight--,
          );
        },
        busy: () => this.inFlight > MAX_IN_FLIGHT,
      },
      { host: 'vscode', log, scoreboard: () => dashboardScoreboard(home), actions: editorActions, runActions: editorRunActions, name: 'panel' },
    );
    webview.html = pageHtml({ csp, nonce, scriptSrc: uri(WEBVIEW_FILES.script), styleHrefs: [uri(WEBVIEW_FILES.style)], title: 'Verdict' });
  }

  /** Brings the panel to the front, optionally on one view. */
  reveal(view?: 'live' | 'library' | 'scoreboard'): void {
    this.panel.reveal();
    if (view) this.session.show(view);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.session.dispose();
    this.source.close();
    for (const d of this.subscriptions) d.dispose();
    this.panel.dispose();
    this.onDispose();
  }
}
