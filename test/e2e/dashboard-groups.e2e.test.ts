import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CLI } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, startHudProcess, type HudProcess } from '../helpers/hud';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dashboard: a best-of-N task with its candidates under it, the winner marked; hostile check output stays text', function () {
  this.timeout(240000);
  let home: string;
  let hud: HudProcess;
  let browser: Browser;
  let page: Page;
  let run: ResultPromise | undefined;
  const consoleErrors: string[] = [];

  before(async function () {
    if (!findChromium()) {
      console.log('    skipped: no Chromium or Chrome found; set CHROMIUM=/path/to/chrome to run the dashboard browser tests');
      this.skip();
    }
    const dir = tempDir();
    home = path.join(dir, 'home');
    hud = await startHudProcess(home);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(hud.url);
    // Candidate 1's check prints markup that would run a script if it were ever rendered as HTML, and an escape.
    const hostile = `printf 'worse <img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\\033[2J\\n'`;
    const manifest = writeManifest(dir, {
      run_name: 'groups',
      workdir: 'work',
      max_parallel: 4,
      tasks: [
        scriptTask('pick', 'echo "candidate $VERDICT_CANDIDATE" > out.txt', `if grep -q 'candidate 1' out.txt; then ${hostile}; exit 1; fi; test -s out.txt`, { repeat: 3, select: 'all', max_attempts: 1 }),
        // Keeps the run live (the live list shows it) until the test ends.
        scriptTask('sleeper', 'sleep 600', 'true'),
      ],
    });
    run = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
    for (let i = 0; i < 400 && !fs.existsSync(path.join(home, 'runs')); i++) await sleep(50);
  });

  after(async () => {
    await browser?.close();
    await hud?.stop();
    if (run) {
      run.kill('SIGINT');
      await run;
    }
  });

  it('lists the candidates by number under their task, marks the winner, says how the task was decided', async () => {
    await page.locator('.run-row', { hasText: 'groups' }).locator('.run-open').click();
    const group = page.locator('.candidates-of[data-group="pick"]');
    await group.getByTestId('select-line').filter({ hasText: 'winner: candidate 2' }).waitFor({ timeout: 60000 });
    assert.deepEqual(await group.getByTestId('select-line').allInnerTexts(), ['select all', 'winner: candidate 2 (pick--c2, script)']);
    // The task's own entry is a row of the work; its candidates are not rows of their own beside it.
    assert.deepEqual(await page.locator('.work > .deliverables > .deliverable').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), ['pick', 'sleeper']);
    assert.deepEqual(await group.locator('.deliverable').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), ['pick--c1', 'pick--c2', 'pick--c3']);
    assert.deepEqual(await group.getByTestId('candidate-label').allInnerTexts(), ['candidate 1', 'candidate 2 · winner', 'candidate 3']);
    assert.deepEqual(await group.locator('.deliverable.winner').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), ['pick--c2']);
  });

  it('a candidate\'s hostile check output is shown as text: no element made of it, no script run', async () => {
    const loser = page.locator('.deliverable[data-key="pick--c1"]');
    await loser.locator('[data-verdict="FAIL"]').first().waitFor({ timeout: 60000 });
    const text = (await loser.innerText()) + (await loser.getByTestId('task-reason').count() ? await loser.getByTestId('task-reason').innerText() : '');
    assert.match(text, /<img src=x onerror="window\.__pwned=1"><script>window\.__pwned=2<\/script>/, 'the markup is there, as text');
    assert.equal(await page.locator('img[src="x"]').count(), 0, 'no element was made of it');
    assert.equal(await page.evaluate('typeof window.__pwned === "undefined" ? null : window.__pwned'), null, 'no script of it ran');
    assert.deepEqual(consoleErrors, []);
  });
});
