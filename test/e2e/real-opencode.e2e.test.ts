import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import { assertReviewedTwice, doctorOf, reviewScenario, runScenarios } from '../helpers/real-suite';

// The real opencode CLI run by the built `verdict run` inside Verdict's sandbox against the scripted model server's
// Chat Completions, in scenarios the other real-engine suites share (test/helpers/real-suite.ts), at once; its worker
// PASS with exact usage, a refused permission, a reviewer asking for changes and a best-of-2 candidate are in
// test/e2e/real-engines.e2e.test.ts, its quota wait in test/e2e/hostile-waits.e2e.test.ts.

const MODEL = 'verdict-test/stub-model';
// The user's own opencode settings and instructions ($XDG_CONFIG_HOME/opencode), as they were before the run.
const USER_CONFIG = '{\n  "$schema": "https://opencode.ai/config.json",\n  "theme": "github"\n}\n';
const USER_AGENTS = '# My instructions\nAlways answer in English.\n';

describe(`real opencode CLI against the scripted model server, the shared scenarios (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  let run: (name: string) => RealRun;

  before(async function () {
    this.timeout(600000);
    const base: RealTaskOptions = { engine: 'opencode', model: MODEL, binDirs: [await ensureCli('opencode')], mode: 'plain' };
    const scenarios: Record<string, RealTaskOptions> = {
      review: {
        ...reviewScenario({ ...base, mode: 'worktree' }),
        seedHome: (home) => {
          const config = path.join(home, '.config', 'opencode');
          fs.mkdirSync(config, { recursive: true });
          fs.writeFileSync(path.join(config, 'opencode.json'), USER_CONFIG);
          fs.writeFileSync(path.join(config, 'AGENTS.md'), USER_AGENTS);
        },
      },
      badKey: { ...base, server: { requireKey: 'sk-the-real-one' } },
    };
    run = await runScenarios('opencode', scenarios);
  });

  it('an opencode reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    assertReviewedTwice(run('review'), 'opencode');
  });

  it("after four runs of opencode (two workers, two reviewers) the user's opencode.json and AGENTS.md are byte-identical; its sessions went to its data dir", () => {
    const r = run('review');
    const config = path.join(r.userHome, '.config', 'opencode');
    assert.deepEqual(
      [fs.readFileSync(path.join(config, 'opencode.json'), 'utf8'), fs.readFileSync(path.join(config, 'AGENTS.md'), 'utf8')],
      [USER_CONFIG, USER_AGENTS],
      explainRun(r),
    );
    const data = path.join(r.userHome, '.local', 'share', 'opencode');
    assert.ok(
      fs.existsSync(data) && fs.readdirSync(data).length > 0,
      `opencode kept its sessions under $XDG_DATA_HOME/opencode (${fs.existsSync(data) ? fs.readdirSync(data).join(', ') : 'missing'})`,
    );
  });

  it('a key the API refuses (401): the attempt FAILs as an auth error; verdict doctor in that home says opencode is not logged in and names the fix', async () => {
    const r = run('badKey');
    assert.equal(r.result.exitCode, 1, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'FAIL']],
      explainRun(r),
    );
    assert.match(String(r.rows[0]?.notes), /\(auth\)/, explainRun(r));
    assert.equal(r.server.usageSent.calls, 0);
    const { entry: opencode, json, text } = await doctorOf('opencode', r);
    assert.deepEqual([opencode?.login, opencode?.version], ['no', '1.18.33'], json);
    assert.match(String(opencode?.fix), /^opencode auth login\b/);
    assert.deepEqual(opencode?.tested, { status: 'tested', versions: ['1.18.33'] });
    assert.match(text, /1\.18\.33[^\n]*, a tested version/, text);
  });
});
