import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { slotsDir, takeSlots } from '../../extension/core/run/slots';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, rawGet, startHudProcess, type HudProcess } from '../helpers/hud';

/**
 * The README's pictures are taken by this test. They go to out/screenshots/ on every run, and replace the committed
 * ones in docs/images/ only with VERDICT_UPDATE_SCREENSHOTS=1, so `npm test` leaves the working tree clean.
 */
const IMAGES = path.resolve(process.env.VERDICT_UPDATE_SCREENSHOTS === '1' ? 'docs/images' : 'out/screenshots');
fs.mkdirSync(IMAGES, { recursive: true });

describe('dashboard in a browser: verdict hud + a live run, in Debian chromium', function () {
  this.timeout(180000);
  let dir: string;
  let home: string;
  let hud: HudProcess;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];
  let run: ReturnType<typeof cli> | undefined;

  before(async function () {
    if (!findChromium()) {
      // CI and test/integration/host/install.sh install Debian's chromium; elsewhere point CHROMIUM at a Chrome.
      console.log('    skipped: no Chromium or Chrome found; set CHROMIUM=/path/to/chrome to run the dashboard browser tests');
      this.skip();
    }
    dir = tempDir();
    home = path.join(dir, 'home');
    // A half-written state file beside the real runs: skipped with a note, the others still show.
    fs.mkdirSync(path.join(home, 'runs', 'half-written'), { recursive: true });
    fs.writeFileSync(path.join(home, 'runs', 'half-written', 'state.json'), '{"version":1,"runId":"half-wr');
    hud = await startHudProcess(home);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 860 }, colorScheme: 'dark' });
    // The 400/409 answers of the bad-message test show up as "Failed to load resource"; anything else is a bug.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(hud.url);
  });

  after(async () => {
    await browser?.close();
    await hud?.stop();
    if (run) await run;
  });

  it('refuses a request without the token and one with a foreign Host header (403)', async () => {
    assert.equal(await rawGet(hud.port, '/', `127.0.0.1:${hud.port}`), 403);
    assert.equal(await rawGet(hud.port, '/t/not-the-token/', `127.0.0.1:${hud.port}`), 403);
    const withToken = new URL(hud.url).pathname;
    assert.equal(await rawGet(hud.port, withToken, 'evil.example'), 403);
    assert.equal(await rawGet(hud.port, withToken, `evil.example:${hud.port}`), 403);
    assert.equal(await rawGet(hud.port, withToken, `127.0.0.1:${hud.port}`), 200);
  });

  it('shows the half-written state file as skipped, with why', async () => {
    const note = page.getByTestId('skipped');
    await note.waitFor();
    assert.match(await note.innerText(), /runs\/half-written\/state\.json — corrupt or half-written JSON/);
  });

  it('shows the slots in use under each machine-wide engine or login limit, one line each, live', async () => {
    // A slot of engine codex (max_parallel 3) held by this process, as a run's orchestrator holds one.
    const codex = { group: 'engine-codex', limit: 3, label: 'engine codex' };
    const release = await takeSlots(home, [codex], { runId: 'elsewhere', task: 'k', engine: 'codex' });
    assert.ok(release);
    const line = page.getByTestId('slot-group');
    await line.first().waitFor();
    assert.equal((await line.first().innerText()).trim(), 'codex: 1 of 3 slots');
    await release();
    await line.filter({ hasText: 'codex: 0 of 3 slots' }).waitFor();
    // No table, no limit: the line goes (the later pictures are as before).
    fs.rmSync(slotsDir(home), { recursive: true, force: true });
    await page.getByTestId('slots').waitFor({ state: 'detached' });
  });

  it("shows a run started by `verdict run` live: it appears, a worker's output grows, verdicts change", async () => {
    const manifest = writeManifest(dir, {
      run_name: 'hud-e2e',
      max_parallel: 2,
      tasks: [
        scriptTask(
          'slow-writer',
          'for i in $(seq 1 40); do echo "tick-$i"; sleep 0.15; done; echo done > out.txt',
          'test -s out.txt && echo "out.txt is there"',
          {
            expect_files: ['out.txt'],
            verified: 'the worker wrote out.txt after forty ticks.',
          },
        ),
        scriptTask('liar', 'echo "All done, trust me"; sleep 2', 'echo "RAW-CHECK-OUTPUT: banana.txt not found"; exit 3', {
          max_attempts: 1,
          verified: 'banana.txt exists.',
        }),
      ],
    });
    // No --no-dashboard: a hud serves this home, so the run reuses it and prints its URL (and opens nothing here).
    run = cli(['run', manifest, '--home', home, '--identity', 'hud-tester']);
    const row = page.locator('.run-row[data-liveness="running"]', { hasText: 'hud-e2e' });
    await row.waitFor({ timeout: 30000 });
    assert.match(await row.innerText(), /hud-tester@/);
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-live.png') });

    await row.locator('.run-open').click();
    const tail = page.locator('pre[data-testid="output-tail"][data-key="slow-writer"]');
    await tail.filter({ hasText: 'tick-3' }).waitFor({ timeout: 30000 });
    const early = (await tail.innerText()).length;
    await tail.filter({ hasText: 'tick-15' }).waitFor({ timeout: 30000 });
    assert.ok((await tail.innerText()).length > early, 'the output tail grew');

    const verdictOf = (key: string) => page.locator(`.deliverable[data-key="${key}"] .deliverable-head .verdict`);
    await verdictOf('liar').and(page.locator('[data-verdict="FAIL"]')).waitFor({ timeout: 30000 });
    await verdictOf('slow-writer').and(page.locator('[data-verdict="PASS"]')).waitFor({ timeout: 60000 });
    assert.match(await page.locator('.deliverable[data-key="slow-writer"] .verified').innerText(), /forty ticks/);

    const result = await run;
    assert.equal(result.exitCode, 1, result.all);
    assert.ok(result.stdout.includes(`dashboard: ${hud.url}`), `verdict run reuses the hud and prints its URL:\n${result.all}`);
  });

  it('opens the raw check output with one click', async () => {
    await page.locator('vscode-button[data-artifact="check-output"][data-key="liar"][data-attempt="1"]').click();
    const text = page.locator('.deliverable[data-key="liar"] pre[data-testid="artifact-text"]');
    await text.waitFor();
    assert.equal((await text.innerText()).trim(), 'RAW-CHECK-OUTPUT: banana.txt not found');
    await page.locator('[data-liveness="finished"]').first().waitFor();
    await page.screenshot({ path: path.join(IMAGES, 'dashboard-run.png'), fullPage: true });
  });

  it('rejects a malformed or unknown message from the page and logs it, acting on nothing', async () => {
    // A string, not a function: tsx's helpers (__name) do not exist in the page.
    const statuses = (await page.evaluate(`(async () => {
      const es = new EventSource('events');
      const client = await new Promise((resolve) => es.addEventListener('hello', (e) => resolve(JSON.parse(e.data).client)));
      const post = (body, id = client) => fetch('message?client=' + id, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status);
      const statuses = [await post('{"type":'), await post('{"type":"delete-everything"}'),
        await post('{"type":"load-artifact","seq":1,"runId":"../../etc","artifact":"manifest"}'), await post('{"type":"ready"}', 'no-such-client')];
      es.close();
      return statuses;
    })()`)) as number[];
    assert.deepEqual(statuses, [400, 400, 400, 409]);
    for (let i = 0; i < 20 && !/unknown message type "delete-everything"/.test(hud.log()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(hud.log(), /rejected a message from the page: malformed JSON/);
    assert.match(hud.log(), /rejected a message from the page: unknown message type "delete-everything"/);
    assert.match(hud.log(), /rejected a message from the page: bad "load-artifact" message: \/runId/);
  });

  it('ran under its CSP without a violation or a page error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
