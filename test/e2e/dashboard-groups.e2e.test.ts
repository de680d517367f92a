import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CLI } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, startHudProcess, type HudProcess } from '../helpers/hud';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dashboard: a best-of-N task with its candidates under it, the winner marked; validated workers under their validator; hostile check output stays text', function () {
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
        scriptTask('pick', 'echo "candidate $VERDICT_CANDIDATE" > out.txt', `if grep -q 'candidate 1' out.txt; then ${hostile}; exit 1; fi; test -s out.txt`, {
          repeat: 3,
          select: 'all',
          max_attempts: 1,
        }),
        // Validated: `sort`'s two workers pass and its validator runs (letters drawn); `gate`'s worker 2 fails, so its
        // validator is BLOCKED. `x--w1` is a plain task named like a worker.
        scriptTask('sort', 'echo sorted > s.txt', 'test -s s.txt', {
          max_attempts: 1,
          validate: { workers: 2, report: 'report.md', spec: 'ls "$VERDICT_INPUTS" > report.md', check: 'test -s report.md' },
        }),
        scriptTask('gate', 'echo "$VERDICT_TASK_KEY" > g.txt', 'grep -qv gate--w2 g.txt || { echo "worker 2 fails"; exit 1; }', {
          max_attempts: 1,
          validate: { workers: 2, check: 'test -s validation.md', spec: 'ls > validation.md' },
        }),
        scriptTask('x--w1', 'echo x > x.txt', 'test -s x.txt'),
        // Keeps the run live (the live list shows it) until the test ends.
        scriptTask('sleeper', 'sleep 600', 'true'),
      ],
    });
    // --force: the sleeper's check `true` is a lint error; it never reaches it.
    run = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', '--force'], { reject: false, all: true, stdin: 'ignore' });
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
    assert.deepEqual(await page.locator('.work > .deliverables > .deliverable').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), [
      'pick',
      'sort',
      'gate',
      'x--w1',
      'sleeper',
    ]);
    assert.deepEqual(await group.locator('.deliverable').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), [
      'pick--c1',
      'pick--c2',
      'pick--c3',
    ]);
    assert.deepEqual(await group.getByTestId('candidate-label').allInnerTexts(), ['candidate 1', 'candidate 2 · winner', 'candidate 3']);
    assert.deepEqual(await group.locator('.deliverable.winner').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), ['pick--c2']);
  });

  it('validated: the workers under their validator with role, number and letter; the blocked validator names its blocker; a look-alike key is a task of its own', async () => {
    const sort = page.locator('.members-of[data-lead="sort"]');
    await page.locator('.work > .deliverables > .deliverable[data-key="sort"] [data-verdict="PASS"]').first().waitFor({ timeout: 60000 });
    assert.equal(await sort.getAttribute('data-role'), 'validator');
    assert.deepEqual(await sort.getByTestId('lead-line').allInnerTexts(), ['validator of 2 workers']);
    assert.deepEqual(
      await sort
        .locator('.deliverable')
        .evaluateAll((els) => els.map((e) => [e.getAttribute('data-key'), e.getAttribute('data-role'), e.getAttribute('data-member')])),
      [
        ['sort--w1', 'worker', '1'],
        ['sort--w2', 'worker', '2'],
      ],
    );
    // The letters the validator saw, as state.json drew them: A and B, one each.
    const labels = await sort.getByTestId('member-label').allInnerTexts();
    assert.deepEqual(
      labels.map((l) => l.replace(/ · [AB]$/, '')),
      ['worker 1', 'worker 2'],
    );
    assert.deepEqual(labels.map((l) => l.slice(-1)).sort(), ['A', 'B']);
    const [id] = fs.readdirSync(path.join(home, 'runs'));
    const names =
      (JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as { inputNames: Record<string, Record<string, string>> })
        .inputNames.sort ?? {};
    assert.deepEqual(labels, [`worker 1 · ${names['sort--w1']}`, `worker 2 · ${names['sort--w2']}`]);

    const gate = page.locator('.members-of[data-lead="gate"]');
    await gate.getByTestId('lead-line').filter({ hasText: 'blocked by' }).waitFor({ timeout: 60000 });
    assert.deepEqual(await gate.getByTestId('lead-line').allInnerTexts(), ['validator of 2 workers', 'blocked by worker 2 (gate--w2 FAIL)']);
    assert.deepEqual(await gate.locator('.deliverable.blocking').evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))), ['gate--w2']);
    assert.equal(await page.locator('.members-of .deliverable[data-key="x--w1"]').count(), 0, 'x--w1 is no member');
  });

  it("a candidate's hostile check output is shown as text: no element made of it, no script run", async () => {
    const loser = page.locator('.deliverable[data-key="pick--c1"]');
    await loser.locator('[data-verdict="FAIL"]').first().waitFor({ timeout: 60000 });
    const text = (await loser.innerText()) + ((await loser.getByTestId('task-reason').count()) ? await loser.getByTestId('task-reason').innerText() : '');
    assert.match(text, /<img src=x onerror="window\.__pwned=1"><script>window\.__pwned=2<\/script>/, 'the markup is there, as text');
    assert.equal(await page.locator('img[src="x"]').count(), 0, 'no element was made of it');
    assert.equal(await page.evaluate('typeof window.__pwned === "undefined" ? null : window.__pwned'), null, 'no script of it ran');
    assert.deepEqual(consoleErrors, []);
  });
});
