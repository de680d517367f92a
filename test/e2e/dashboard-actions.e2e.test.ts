import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { execa, type ResultPromise } from 'execa';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CLI } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, startHudProcess, type HudProcess } from '../helpers/hud';
import { requireSandbox } from '../helpers/sandbox-env';
import type { RunState } from '../../extension/core/live/state';
import { shortHost } from '../../extension/core/host/hostname';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const IMAGES = path.resolve(process.env.VERDICT_UPDATE_SCREENSHOTS === '1' ? 'docs/images' : 'out/screenshots');

/** The DOM as the page functions below use it (run in the page; the tests are compiled without the DOM's types). */
interface PageElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}
interface PageGlobals {
  document: { body: PageElement; querySelector(selector: string): PageElement; querySelectorAll(selector: string): Iterable<PageElement> };
  getComputedStyle(e: PageElement): { color: string; backgroundColor: string; fontWeight: string };
}

/** A client id of the hud's event stream, taken the way a page gets one (its `hello` event). */
async function clientId(url: string): Promise<{ client: string; close: () => void }> {
  const ac = new AbortController();
  const res = await fetch(new URL('events', url), { signal: ac.signal });
  const reader = res.body!.getReader();
  let text = '';
  for (;;) {
    const { value } = await reader.read();
    text += Buffer.from(value ?? new Uint8Array()).toString('utf8');
    const m = /event: hello\ndata: (\{.*\})/.exec(text);
    if (m?.[1]) return { client: (JSON.parse(m[1]) as { client: string }).client, close: () => ac.abort() };
  }
}

describe('dashboard buttons in a browser: stop, merge and diff through verdict hud; a foreign origin cannot act', function () {
  this.timeout(240000);
  let dir: string;
  let home: string;
  let repo: string;
  let hud: HudProcess;
  let browser: Browser;
  let page: Page;
  let run: ResultPromise | undefined;
  let runId = '';
  const consoleErrors: string[] = [];
  const state = () => JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;

  before(async function () {
    if (!findChromium()) {
      console.log('    skipped: no Chromium or Chrome found; set CHROMIUM=/path/to/chrome to run the dashboard browser tests');
      this.skip();
    }
    // The merge re-checks the task in the sandbox, and refuses without one.
    await requireSandbox(this);
    dir = tempDir();
    home = path.join(dir, 'home');
    repo = makeRepo(path.join(dir, 'repo'));
    hud = await startHudProcess(home, { VERDICT_IDENTITY: 'hud-user' });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(hud.url);
    // Listed dependent first: every view shows it after its prerequisite anyway.
    const manifest = writeManifest(repo, {
      run_name: 'buttons',
      worktrees: true,
      max_parallel: 4,
      tasks: [
        // Checks that can fail (lint refuses `true`, and the Rerun button starts `verdict rerun`, which would refuse it).
        { ...scriptTask('blocked', 'echo never > never.txt', 'test -s never.txt'), after: ['fails'] },
        scriptTask('sleeper', 'echo sleeping until stopped; sleep 600; echo slept > slept.txt', 'test -s slept.txt'),
        scriptTask('writer', 'echo hello > hello.txt', 'test -s hello.txt'),
        scriptTask('fails', 'echo nothing', 'echo "hello.txt is missing"; exit 1', { max_attempts: 1 }),
      ],
    });
    run = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
    for (let i = 0; i < 400 && !runId; i++) {
      await sleep(50);
      const ids = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
      runId = ids.find((id) => fs.existsSync(path.join(home, 'runs', id, 'state.json'))) ?? '';
    }
    assert.ok(runId, 'the run started');
  });

  after(async () => {
    await browser?.close();
    await hud?.stop();
    if (run) {
      run.kill('SIGINT');
      await run;
    }
  });

  it("shows the run in graph order with each task's step, its prerequisites and BLOCKED with the reason", async () => {
    await page.locator('.run-row', { hasText: 'buttons' }).locator('.run-open').click();
    const blocked = page.locator('.deliverable[data-key="blocked"]');
    await blocked.locator('[data-verdict="BLOCKED"]').waitFor({ timeout: 60000 });
    assert.match(await blocked.getByTestId('task-reason').innerText(), /^BLOCKED: .*fails/);
    assert.equal(await blocked.getByTestId('after').innerText(), 'after fails');
    assert.deepEqual(await page.locator('.deliverable').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), [
      'sleeper',
      'writer',
      'fails',
      'blocked',
    ]);
    // The sleeper is in its work step; the failed task says where its attempt ended.
    await page.locator('.deliverable[data-key="sleeper"] [data-testid="step"]', { hasText: 'attempt 1 · work' }).waitFor({ timeout: 30000 });
    assert.match(await page.locator('.deliverable[data-key="fails"] .attempt-line').innerText(), /FAIL at check/);
    await page.locator('.deliverable[data-key="writer"] .deliverable-head [data-verdict="PASS"]').waitFor({ timeout: 60000 });
  });

  it('refuses a stop posted by a page of another origin, even one holding the token and a client id: nothing reaches the run', async () => {
    const { client, close } = await clientId(hud.url);
    const target = new URL(`message?client=${client}`, hud.url).toString();
    const body = JSON.stringify({ type: 'task-action', seq: 1, runId, key: 'sleeper', action: 'stop' });
    // The hostile page: a server on another port of 127.0.0.1 is another origin.
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><form id="f" method="POST" enctype="text/plain" action="${target}"><input name='${body.slice(0, -2)}' value='"}'></form>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const hostile = await browser.newPage();
      await hostile.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      const outcome = (await hostile.evaluate(`(async () => {
        const out = [];
        // A simple request (no preflight): sent, but refused for its Origin; the page cannot read the answer.
        out.push(await fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(body)} }).then((r) => r.type, (e) => 'error ' + e.message));
        // JSON needs a preflight, which the hud never allows.
        out.push(await fetch(${JSON.stringify(target)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(body)} }).then((r) => 'status ' + r.status, () => 'blocked'));
        return out;
      })()`)) as string[];
      assert.deepEqual(outcome, ['opaque', 'blocked']);
      // A form posted across origins (a navigation) carries the hostile Origin too.
      await Promise.all([hostile.waitForNavigation(), hostile.evaluate('document.getElementById("f").submit()')]);
      assert.match(await hostile.content(), /forbidden: only the dashboard page itself may post/);
      await hostile.close();
    } finally {
      evil.close();
      close();
    }
    // From outside any browser, a POST without the page's Origin is refused the same way.
    const bare = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(bare.status, 403);
    await sleep(1000);
    assert.equal(fs.existsSync(path.join(home, 'runs', runId, 'control.jsonl')), false, 'no control command was appended');
    assert.equal(state().tasks.find((t) => t.key === 'sleeper')?.status, 'running');
    assert.match(hud.log(), /403 for a POST from origin "http:\/\/127\.0\.0\.1:\d+"/);
  });

  it("shows a passed task's diff as text (the hud's read-only diff endpoint)", async () => {
    await page.locator('vscode-button[data-action="open-diff"][data-key="writer"]').click();
    const diff = page.locator('pre[data-testid="diff-text"][data-key="writer"]');
    await diff.waitFor({ timeout: 20000 });
    const text = await diff.innerText();
    assert.match(text, /^diff --git a\/hello\.txt b\/hello\.txt/m);
    assert.match(text, /^\+hello$/m);
    // Coloured as VS Code's dark theme colours a diff (the page is in a dark colour scheme): the added line green on
    // green, the hunk header blue, the file headers bold; unchanged text keeps the page's colour.
    // Run in the page (the tests are compiled without the DOM's types): each line's kind, text, colour, background, weight.
    const kinds = await page.evaluate(() => {
      const g = globalThis as unknown as PageGlobals;
      return [...g.document.querySelectorAll('pre[data-testid="diff-text"][data-key="writer"] .diff-line')].map((e) => {
        const st = g.getComputedStyle(e);
        return [e.getAttribute('data-kind'), e.textContent, st.color, st.backgroundColor, st.fontWeight];
      });
    });
    assert.deepEqual(kinds.at(-1), ['add', '+hello\n', 'rgb(129, 184, 139)', 'rgba(155, 185, 85, 0.2)', '400']);
    assert.deepEqual(kinds.at(-2)?.slice(0, 3), ['hunk', '@@ -0,0 +1 @@\n', 'rgb(55, 148, 255)']);
    assert.deepEqual(
      kinds.slice(0, -2).map((k) => [k[0], k[4]]),
      kinds.slice(0, -2).map(() => ['meta', '700']),
      'every line before the hunk is a file header',
    );
    assert.ok(
      kinds.some((k) => k[1] === '+++ b/hello.txt\n'),
      'the +++ header is among them, not an added line',
    );
  });

  it("follows the system's colour scheme while open: buttons and diff colours turn light, then dark again", async () => {
    // The toolkit's buttons read the theme's variables into their own tokens; those must follow the scheme like the page.
    // In the page: its background, a toolkit button's background and an added diff line's colour.
    const look = () =>
      page.evaluate(() => {
        const g = globalThis as unknown as PageGlobals;
        const button = g.document.querySelector('vscode-button[data-view="library"]');
        const added = g.document.querySelector('pre[data-testid="diff-text"] .diff-line.add');
        return [g.getComputedStyle(g.document.body).backgroundColor, g.getComputedStyle(button).backgroundColor, g.getComputedStyle(added).color];
      });
    // The toolkit reads the variables again when <body>'s class changes: wait for the button, then read all three.
    const buttonIs = (rgb: string) =>
      page
        .waitForFunction(
          (want) => {
            const g = globalThis as unknown as PageGlobals;
            return g.getComputedStyle(g.document.querySelector('vscode-button[data-view="library"]')).backgroundColor === want;
          },
          rgb,
          { timeout: 10000 },
        )
        .catch(() => undefined);
    assert.deepEqual(await look(), ['rgb(31, 31, 31)', 'rgb(49, 49, 49)', 'rgb(129, 184, 139)'], 'dark from the start');
    await page.emulateMedia({ colorScheme: 'light' });
    await buttonIs('rgb(229, 229, 229)');
    assert.deepEqual(await look(), ['rgb(255, 255, 255)', 'rgb(229, 229, 229)', 'rgb(88, 124, 12)'], 'light: the page, its buttons and the diff');
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-light.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await buttonIs('rgb(49, 49, 49)');
    assert.deepEqual(await look(), ['rgb(31, 31, 31)', 'rgb(49, 49, 49)', 'rgb(129, 184, 139)'], 'dark again');
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-dark-diff.png'), fullPage: true });
  });

  it('stops the sleeping task with its Stop button: acknowledged in state.json, the task CANCELLED, the run ends', async () => {
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-buttons.png'), fullPage: true });
    await page.locator('vscode-button[data-action="stop"][data-key="sleeper"]').click();
    const result = page.locator('[data-testid="act-result"][data-key="sleeper"]');
    await result.and(page.locator('[data-result="done"], [data-result="refused"], [data-result="sent"]')).waitFor({ timeout: 30000 });
    assert.match(await result.innerText(), /^stop sleeper: done/);
    const ack = state().control?.find((c) => c.verb === 'stop');
    assert.ok(ack, 'the stop is acknowledged in state.json');
    assert.deepEqual([ack.task, ack.result, ack.by], ['sleeper', 'done', 'hud-user']);
    assert.ok(ack.ackAt >= ack.at);
    assert.equal(state().tasks.find((t) => t.key === 'sleeper')?.status, 'CANCELLED');
    const end = await run!;
    run = undefined;
    assert.equal(end.exitCode, 1, String(end.all));
    await page.locator('[data-liveness="finished"]').first().waitFor({ timeout: 20000 });
  });

  it('merges the passed task with its Merge button: its branch lands on the base branch', async () => {
    const before = git(repo, 'rev-parse', 'main');
    assert.equal(fs.existsSync(path.join(repo, 'hello.txt')), false);
    await page.locator('vscode-button[data-action="merge"][data-key="writer"]').click();
    const result = page.locator('[data-testid="act-result"][data-key="writer"]');
    await result.and(page.locator('[data-result="done"], [data-result="refused"]')).waitFor({ timeout: 60000 });
    assert.match(await result.innerText(), /^writer: MERGED into main \(now [0-9a-f]{10}\)/);
    assert.notEqual(git(repo, 'rev-parse', 'main'), before);
    // Merged is recorded and shown: MERGED with the commit in the task's header, and its Merge button gone.
    const head = git(repo, 'rev-parse', 'main');
    const landed = page.locator('li.deliverable[data-key="writer"] [data-testid="landed"]');
    await landed.waitFor({ timeout: 20000 });
    assert.equal(await landed.innerText(), `MERGED into main at ${head.slice(0, 10)}`);
    await page.locator('vscode-button[data-action="merge"][data-key="writer"]').waitFor({ state: 'detached', timeout: 20000 });
    assert.equal(git(repo, 'show', 'main:hello.txt'), 'hello');
    assert.equal(fs.readFileSync(path.join(repo, 'hello.txt'), 'utf8'), 'hello\n', 'the checkout of the base branch has it');
    // A failed task has no Merge button, and a merge asked for anyway is refused by the host.
    assert.equal(await page.locator('vscode-button[data-action="merge"][data-key="fails"]').count(), 0);
  });

  it('reruns a failed task of the ended run with its Rerun button: the same run goes on under a new orchestrator', async () => {
    await page.locator('vscode-button[data-action="rerun"][data-key="fails"]').click();
    const result = page.locator('[data-testid="act-result"][data-key="fails"]');
    await result.and(page.locator('[data-result="done"], [data-result="refused"], [data-result="sent"]')).waitFor({ timeout: 60000 });
    assert.match(await result.innerText(), new RegExp(`^rerun fails: run ${runId} goes on under a new orchestrator`));
    for (let i = 0; i < 600 && !(state().status !== 'running' && state().tasks.find((t) => t.key === 'fails')?.attempts.length === 2); i++) await sleep(100);
    const fails = state().tasks.find((t) => t.key === 'fails');
    assert.equal(fails?.attempts.length, 2, 'a second attempt, numbered on, in the same run');
    assert.equal(fails?.status, 'FAIL');
    assert.equal(state().tasks.find((t) => t.key === 'writer')?.status, 'PASS', 'what passed is kept');
  });

  it('shows an engine waiting for its quota: "waiting for <engine> until HH:MM" in the live list, who set it and why in its tooltip', async () => {
    // A live run (this process is its orchestrator) whose codex waits an hour for a usage-limit reset.
    const until = Date.now() + 3600_000;
    const waiting: RunState = {
      ...state(),
      runId: 'waiting-run',
      runName: 'quota-wait',
      status: 'running',
      pid: process.pid,
      host: shortHost(),
      heartbeatAt: Date.now(),
      endedAt: null,
      control: [],
      waits: {
        codex: {
          until,
          reset: until,
          reason: 'usage limit reached; try again at 3pm',
          source: 'its turn.failed event',
          why: "the engine's own reset",
          since: Date.now(),
          task: 'writer',
          attempt: 1,
        },
      },
    };
    fs.mkdirSync(path.join(home, 'runs', 'waiting-run'), { recursive: true });
    fs.writeFileSync(path.join(home, 'runs', 'waiting-run', 'state.json'), JSON.stringify(waiting));
    await page.locator('vscode-button[data-view="live"]').click();
    const hhmm = `${String(new Date(until).getHours()).padStart(2, '0')}:${String(new Date(until).getMinutes()).padStart(2, '0')}`;
    const wait = page.locator('.run-row[data-run-id="waiting-run"] [data-testid="wait"]');
    await wait.waitFor({ timeout: 20000 });
    assert.equal(await wait.innerText(), `waiting for codex until ${hhmm}`);
    assert.equal(
      await wait.getAttribute('title'),
      'set by writer attempt 1 (its turn.failed event): "usage limit reached; try again at 3pm"; the engine\'s own reset',
    );
  });

  it('ran under its CSP without a violation or a page error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});

describe('run buttons in a browser: pause, resume and drain a real run through verdict hud, each shown only when it applies', function () {
  this.timeout(240000);
  let home: string;
  let hud: HudProcess;
  let browser: Browser;
  let page: Page;
  let run: ResultPromise | undefined;
  let runId = '';
  const consoleErrors: string[] = [];
  const state = () => JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
  const task = (key: string) => state().tasks.find((t) => t.key === key)!;
  /** Waits until `ok` holds on state.json (read again on every try; a file being replaced is read on the next). */
  const until = async (what: string, ok: () => boolean, ms = 60000) => {
    for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
      try {
        if (ok()) return;
      } catch {
        // state.json is being replaced
      }
    }
    assert.fail(`timed out waiting until ${what}`);
  };
  /** Lets a task's worker finish: it waits for a file named `go` in its own folder. */
  const release = (key: string) => fs.writeFileSync(path.join(task(key).dir, 'go'), '');
  const buttons = () => page.locator('[data-testid="run-actions"] vscode-button').evaluateAll((els) => els.map((e) => e.getAttribute('data-run-action')));
  /** Clicks a run button and returns the host's one-line answer. */
  const click = async (action: string) => {
    await page.locator(`vscode-button[data-run-action="${action}"]`).click();
    const result = page.locator(`[data-testid="run-act-result"][data-action="${action}"]`);
    await result.and(page.locator('[data-result="done"], [data-result="refused"], [data-result="sent"]')).waitFor({ timeout: 90000 });
    return result.innerText();
  };
  const ackOf = (verb: string) =>
    state()
      .control?.filter((c) => c.verb === verb)
      .at(-1);

  before(async function () {
    if (!findChromium()) {
      console.log('    skipped: no Chromium or Chrome found; set CHROMIUM=/path/to/chrome to run the dashboard browser tests');
      this.skip();
    }
    await requireSandbox(this);
    const dir = tempDir();
    home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    hud = await startHudProcess(home, { VERDICT_IDENTITY: 'hud-user' });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(hud.url);
    // One at a time; each worker waits until the test lets it finish, so every step below happens while it runs.
    const waiter = 'until [ -e go ]; do sleep 0.1; done; echo ok > out.txt';
    const manifest = writeManifest(repo, {
      run_name: 'run-buttons',
      worktrees: true,
      max_parallel: 1,
      tasks: ['a', 'b', 'c'].map((k) => scriptTask(k, waiter, 'test -s out.txt', { expect_files: ['out.txt'] })),
    });
    run = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
    for (let i = 0; i < 400 && !runId; i++) {
      await sleep(50);
      const ids = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
      runId = ids.find((id) => fs.existsSync(path.join(home, 'runs', id, 'state.json'))) ?? '';
    }
    assert.ok(runId, 'the run started');
  });

  after(async () => {
    await browser?.close();
    await hud?.stop();
    if (run) {
      run.kill('SIGINT');
      await run;
    }
    // The resumed run's orchestrator (started detached by the hud) is stopped too if a test left it running.
    if (runId && fs.existsSync(path.join(home, 'runs', runId, 'state.json')) && state().status === 'running')
      await execa('node', [CLI, 'stop', runId, '--home', home], { reject: false });
  });

  it('pauses the live run with its Pause button: acknowledged by the hud, PAUSED shown, Resume and Drain offered, no Pause', async () => {
    await page.locator('.run-row', { hasText: 'run-buttons' }).locator('.run-open').click();
    await until('a runs', () => task('a').attempts.some((x) => x.phase === 'running'));
    await page.locator('vscode-button[data-run-action="pause"]').waitFor({ timeout: 30000 });
    assert.deepEqual(await buttons(), ['pause', 'drain']);
    assert.match(await click('pause'), /^pause: done — paused: no new attempt starts; running ones go on/);
    assert.equal(state().paused, true);
    assert.deepEqual([ackOf('pause')?.result, ackOf('pause')?.by], ['done', 'hud-user']);
    await page.locator('[data-testid="run-mode"]', { hasText: 'PAUSED' }).waitFor({ timeout: 20000 });
    await page.locator('vscode-button[data-run-action="pause"]').waitFor({ state: 'detached', timeout: 20000 });
    assert.deepEqual(await buttons(), ['resume', 'drain']);
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-paused.png'), fullPage: true });
  });

  it('resumes it with its Resume button: the next task starts only after the resume was acknowledged', async () => {
    // a finishes while the run is paused; b must wait for the resume.
    release('a');
    await until('a passes', () => task('a').status === 'PASS');
    assert.equal(task('b').attempts.length, 0);
    assert.match(await click('resume'), /^resume: done — resumed: attempts start again/);
    const resumed = ackOf('resume');
    assert.deepEqual([resumed?.result, resumed?.by], ['done', 'hud-user']);
    await until('b starts', () => task('b').attempts.length > 0);
    // Ordered by the run's own records, not by a pause in the test: b started after the resume, a ended before it.
    assert.ok(task('b').attempts[0]!.startedAt >= resumed!.ackAt, 'b started only once the resume was acknowledged');
    assert.ok(task('a').attempts[0]!.endedAt! <= resumed!.ackAt, 'a ended while the run was paused');
    assert.equal(state().paused, false);
    await page.locator('vscode-button[data-run-action="pause"]').waitFor({ timeout: 20000 });
    assert.deepEqual(await buttons(), ['pause', 'drain']);
    assert.equal(await page.getByTestId('run-mode').count(), 0);
  });

  it('drains it with its Drain button: c never starts, b finishes, the run ends; then Resume is offered for c', async () => {
    await until('b runs', () => task('b').attempts.some((x) => x.phase === 'running'));
    assert.match(await click('drain'), /^drain: done — draining: 1 waiting task\(s\) CANCELLED \(drained\); 1 running go on/);
    assert.equal(state().draining, true);
    // Draining: nothing more to pause, resume or drain.
    await page.locator('[data-testid="run-mode"]', { hasText: 'DRAINING' }).waitFor({ timeout: 20000 });
    await page.locator('[data-testid="run-actions"] vscode-button').first().waitFor({ state: 'detached', timeout: 20000 });
    release('b');
    const end = await run!;
    run = undefined;
    assert.equal(end.exitCode, 1, String(end.all));
    assert.deepEqual(
      state().tasks.map((t) => [t.key, t.status, t.attempts.length]),
      [
        ['a', 'PASS', 1],
        ['b', 'PASS', 1],
        ['c', 'CANCELLED', 0],
      ],
    );
    assert.equal(task('c').reason, 'drained');
    await page.locator('[data-liveness="finished"]').first().waitFor({ timeout: 20000 });
    await page.locator('vscode-button[data-run-action="resume"]').waitFor({ timeout: 20000 });
    assert.deepEqual(await buttons(), ['resume']);
  });

  it('resumes the ended run with its Resume button: the same run runs c under a new orchestrator, then offers nothing', async () => {
    assert.match(await click('resume'), new RegExp(`^resume: run ${runId} goes on under a new orchestrator \\(pid \\d+\\)`));
    await until('the resume is recorded', () => state().resumes?.at(-1)?.tasks.join() === 'c');
    await until('c runs', () => task('c').attempts.some((x) => x.phase === 'running'));
    release('c');
    await until('the resumed run ends', () => state().status !== 'running' && task('c').status === 'PASS');
    assert.deepEqual(
      state().tasks.map((t) => [t.key, t.status]),
      [
        ['a', 'PASS'],
        ['b', 'PASS'],
        ['c', 'PASS'],
      ],
    );
    await page.locator('[data-testid="run-actions"] vscode-button').first().waitFor({ state: 'detached', timeout: 20000 });
  });

  it('ran under its CSP without a violation or a page error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
