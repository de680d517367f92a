import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DIFF_MAX_BYTES, SAFE_ID } from '../../../schemas/protocol';
import type { DashboardActions, DashboardRunActions } from '../../core/dashboard/actions';
import { taskDiff } from '../../core/dashboard/diff';
import { DashboardSession, type ScoreboardProvider } from '../../core/dashboard/session';
import { DashboardSource, type DashboardLog, type PoolFeed } from '../../core/dashboard/source';
import { newNonce, pageHtml, WEBVIEW_FILES } from '../../core/dashboard/page-html';
import { MAX_PAGE_MESSAGE_BYTES, parsePageMessageText } from '../../core/dashboard/validate';

/** Bytes an SSE connection may have unsent before worker output is held back for it. */
export const SSE_BUSY_BYTES = 64 * 1024;

/** A running hud. */
export interface Hud {
  /** `http://127.0.0.1:<port>/t/<token>/`: the page, token included. */
  url: string;
  port: number;
  /** Pages connected now. */
  clients(): number;
  /** Closes every connection and the server. */
  close(): Promise<void>;
}

/** Options of {@link startHud}. */
export interface HudOptions {
  home: string;
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** dist/webview: dashboard.js, dashboard.css, themes.css. */
  assets: string;
  log: DashboardLog;
  scoreboard: ScoreboardProvider;
  /** What the page's stop, rerun and merge buttons do (core/dashboard/actions.ts localActions); absent: refused. */
  actions?: DashboardActions;
  /** What the page's pause, resume and drain buttons do (core/dashboard/actions.ts localRunActions); absent: refused. */
  runActions?: DashboardRunActions;
  /** The worker pool shown beside the runs (core/pool/monitor.ts); absent: none. */
  pool?: PoolFeed;
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/**
 * Serves the dashboard of `home` to browsers: HTTP on 127.0.0.1 only. Every request must carry the random token
 * (as the first path segment under /t/; 32 bytes from crypto.randomBytes) and a Host header naming this server
 * (127.0.0.1:<port> or localhost:<port>, against DNS rebinding); anything else gets 403. The page receives
 * server-sent events (`events`) and sends messages with POST (`message?client=<id>`), each validated by its
 * DashboardSession. A POST must also come from the page itself: its Origin header must be this server's
 * (http://127.0.0.1:<port> or http://localhost:<port>) and its body `application/json`, so a page of another origin
 * cannot make the hud stop, rerun, merge, pause, resume or drain anything even if it learnt the token (a cross-origin fetch sends its own
 * Origin, and a form or `no-cors` request cannot send JSON). `diff?run=<id>&task=<key>` (GET) returns a task's diff
 * as text (core/dashboard/diff.ts). @throws the listen error (EADDRINUSE…)
 */
export async function startHud(opts: HudOptions): Promise<Hud> {
  const token = crypto.randomBytes(32).toString('base64url');
  const source = new DashboardSource(opts.home, opts.log, opts.pool ? { pool: opts.pool } : {});
  const clients = new Map<string, { session: DashboardSession; res: http.ServerResponse; ping: NodeJS.Timeout }>();
  let port = 0;

  const server = http.createServer((req, res) => {
    const send = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        ...headers,
      });
      res.end(body);
    };
    const hostHeader = req.headers.host ?? '';
    if (hostHeader !== `127.0.0.1:${port}` && hostHeader !== `localhost:${port}`) {
      opts.log.warn(`hud: 403 for a ${req.method} request with Host "${hostHeader.slice(0, 80)}"`);
      return send(403, 'forbidden: wrong Host header\n');
    }
    const url = new URL(req.url ?? '/', `http://${hostHeader}`);
    const m = /^\/t\/([^/]*)(\/.*)?$/.exec(url.pathname);
    if (!m || !sameToken(m[1] ?? '', token)) {
      opts.log.warn(`hud: 403 for a request without the token (${req.method} ${url.pathname.slice(0, 20)}…)`);
      return send(403, 'forbidden: open the URL `verdict hud` printed (it carries the token)\n');
    }
    const sub = m[2] ?? '';
    if (sub === '') return send(308, '', { location: `/t/${token}/` });
    if (req.method === 'GET' && sub === '/') {
      const nonce = newNonce();
      const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self' 'nonce-${nonce}'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'`;
      const html = pageHtml({ csp, nonce, scriptSrc: WEBVIEW_FILES.script, styleHrefs: [WEBVIEW_FILES.themes, WEBVIEW_FILES.style], title: 'Verdict' });
      return send(200, html, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': `${csp}; frame-ancestors 'none'`,
        'x-frame-options': 'DENY',
      });
    }
    if (req.method === 'GET' && sub === '/health')
      return send(200, JSON.stringify({ ok: true, home: opts.home, clients: clients.size }), { 'content-type': 'application/json' });
    if (req.method === 'GET' && (Object.values(WEBVIEW_FILES) as string[]).includes(sub.slice(1))) {
      const file = path.join(opts.assets, sub.slice(1));
      fs.readFile(file, (err, data) =>
        err
          ? send(500, `missing ${sub.slice(1)}: run the build\n`)
          : send(200, data.toString('utf8'), { 'content-type': TYPES[path.extname(file)] ?? 'text/plain' }),
      );
      return;
    }
    if (req.method === 'GET' && sub === '/events') return openEvents(res);
    if (req.method === 'GET' && sub === '/diff') return serveDiff(url.searchParams.get('run') ?? '', url.searchParams.get('task') ?? '', send);
    if (req.method === 'POST') {
      const origin = req.headers.origin ?? '';
      if (origin !== `http://127.0.0.1:${port}` && origin !== `http://localhost:${port}`) {
        opts.log.warn(`hud: 403 for a POST from origin "${origin.slice(0, 80)}" (only the page itself may post)`);
        req.resume();
        return send(403, 'forbidden: only the dashboard page itself may post\n');
      }
      if (!/^application\/json(;|$)/i.test(req.headers['content-type'] ?? '')) {
        req.resume();
        return send(415, 'messages are application/json\n');
      }
    }
    if (req.method === 'POST' && sub === '/message') return receive(req, url.searchParams.get('client') ?? '', send);
    return send(404, 'not found\n');
  });

  function serveDiff(runId: string, key: string, send: (status: number, body: string) => void): void {
    if (!SAFE_ID.test(runId) || !SAFE_ID.test(key)) return send(400, 'diff needs run=<run id>&task=<task key>\n');
    void taskDiff(source.run(runId), key).then((d) => {
      if (!d.ok) return send(d.status, `${d.reason}\n`);
      send(
        200,
        d.truncated
          ? `${d.text}\n… the diff is longer than ${DIFF_MAX_BYTES} bytes; the rest is not shown (git diff on the task branch shows it all)\n`
          : d.text,
      );
    });
  }

  function openEvents(res: http.ServerResponse): void {
    const id = crypto.randomBytes(12).toString('base64url');
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-content-type-options': 'nosniff',
    });
    res.write(`retry: 2000\nevent: hello\ndata: ${JSON.stringify({ client: id })}\n\n`);
    const session = new DashboardSession(
      source,
      { post: (msg) => void res.write(`data: ${JSON.stringify(msg)}\n\n`), busy: () => res.writableLength > SSE_BUSY_BYTES },
      { host: 'browser', log: opts.log, scoreboard: opts.scoreboard, actions: opts.actions, runActions: opts.runActions, name: `client ${id}` },
    );
    // A comment line now and then keeps proxies and idle timers from closing the stream.
    const ping = setInterval(() => res.write(': ping\n\n'), 15000);
    clients.set(id, { session, res, ping });
    res.on('close', () => {
      clearInterval(ping);
      session.dispose();
      clients.delete(id);
    });
  }

  function receive(req: http.IncomingMessage, client: string, send: (status: number, body: string) => void): void {
    const entry = clients.get(client);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_PAGE_MESSAGE_BYTES) over = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (!entry) {
        opts.log.warn(`hud: rejected a message from an unknown client "${client.slice(0, 30)}"`);
        return send(409, 'unknown client: reconnect to events first\n');
      }
      const parsed = over
        ? ({ ok: false, reason: `message larger than ${MAX_PAGE_MESSAGE_BYTES} bytes` } as const)
        : parsePageMessageText(Buffer.concat(chunks).toString('utf8'));
      if (!parsed.ok) {
        entry.session.reject(parsed.reason);
        return send(400, `rejected: ${parsed.reason}\n`);
      }
      entry.session.receive(parsed.message);
      send(204, '');
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/t/${token}/`,
    port,
    clients: () => clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of clients.values()) c.res.end();
        source.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Constant-time comparison of a presented token with the real one. */
function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}
