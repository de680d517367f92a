// The one module that knows which host the page runs in. In VS Code it calls acquireVsCodeApi() (once: a second
// call throws); in a browser (`verdict hud`) it talks HTTP: server-sent events in, POSTs out, and keeps the page's
// UI state in memory. Everything else in the app uses `host` and never postMessage or fetch directly.
import type { HostToPage, PageToHost } from '../schemas/protocol';

/** What the app needs from its host. */
export interface Host {
  readonly kind: 'vscode' | 'browser';
  /** Sends one message to the host, in order. */
  post(message: PageToHost): void;
  /** `onMessage` gets every host message; `onConnect` runs each time a (new) connection is up: send `ready` then. */
  start(onMessage: (m: HostToPage) => void, onConnect: () => void, onDisconnect: () => void): void;
  /**
   * GETs a read-only resource of the browser host relative to the page (e.g. `diff?run=…&task=…`): its status and text.
   * Absent in VS Code, whose host answers messages only.
   */
  getText?(relative: string): Promise<{ status: number; text: string }>;
  /** UI state kept across reloads of the page (VS Code: the panel's state; browser: memory only). */
  getState<T>(): T | undefined;
  setState<T>(state: T): void;
}

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

function vscodeHost(api: VsCodeApi): Host {
  return {
    kind: 'vscode',
    post: (m) => api.postMessage(m),
    start(onMessage, onConnect) {
      window.addEventListener('message', (e: MessageEvent) => {
        if (typeof e.data === 'object' && e.data !== null && typeof e.data.type === 'string') onMessage(e.data as HostToPage);
      });
      onConnect();
    },
    getState: <T>() => api.getState() as T | undefined,
    setState: (s) => api.setState(s),
  };
}

function browserHost(): Host {
  let memory: unknown;
  let client: string | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  return {
    kind: 'browser',
    post(m) {
      const id = client;
      if (!id) return;
      // One POST at a time keeps messages in order.
      chain = chain
        .then(() =>
          fetch(`message?client=${encodeURIComponent(id)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(m) }),
        )
        .catch(() => undefined);
    },
    start(onMessage, onConnect, onDisconnect) {
      // Relative URLs: the page lives under /t/<token>/, so every request carries the token.
      const events = new EventSource('events');
      events.addEventListener('hello', (e) => {
        client = (JSON.parse((e as MessageEvent<string>).data) as { client: string }).client;
        onConnect();
      });
      events.onmessage = (e: MessageEvent<string>) => onMessage(JSON.parse(e.data) as HostToPage);
      events.onerror = () => {
        client = null;
        onDisconnect();
      };
    },
    // Relative URL: under /t/<token>/ like every other request of the page.
    getText: (relative) => fetch(relative).then(async (r) => ({ status: r.status, text: await r.text() })),
    getState: <T>() => memory as T | undefined,
    setState: (s) => {
      memory = s;
    },
  };
}

/** This page's host, chosen once at load. */
export const host: Host = typeof acquireVsCodeApi === 'function' ? vscodeHost(acquireVsCodeApi()) : browserHost();
