import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { notificationLine } from '../../extension/core/run/notices';
import {
  followRun,
  launchDetached,
  launchFailureReason,
  LaunchError,
  nodeCommand,
  runArguments,
  sendControlAndWait,
  summaryFromRecords,
  waitForRunStart,
} from '../../extension/core/run/run-launch';
import { CLI } from '../helpers/cli';
import { testSandboxMode } from '../helpers/sandbox-env';

const script = (key: string, spec: string, check: string) => ({
  key,
  engine: 'script',
  task_type: 'script',
  verified: `${key} works`,
  spec,
  check,
  max_attempts: 1,
});

describe('run-launch: verdict run as a detached process, followed through VERDICT_HOME', function () {
  this.timeout(60000);
  let tmp: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-launch-'));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('runs the CLI on this Node: Electron with ELECTRON_RUN_AS_NODE, plain Node as it is', () => {
    assert.deepEqual(nodeCommand({ ...process.versions, electron: '30.0.0' } as NodeJS.ProcessVersions, '/opt/code/code'), {
      command: '/opt/code/code',
      env: { ELECTRON_RUN_AS_NODE: '1' },
    });
    assert.deepEqual(nodeCommand({ ...process.versions, electron: undefined } as unknown as NodeJS.ProcessVersions, '/usr/bin/node'), {
      command: '/usr/bin/node',
      env: {},
    });
  });

  it('passes the settings as flags, never opens the dashboard', () => {
    const args = runArguments(
      {
        cli: 'cli.js',
        manifest: '/m.swarm.json',
        home: '/h',
        cwd: '/',
        config: {},
        identity: 'ann',
        maxParallel: 2,
        baseline: true,
        only: ['a', 'b'],
        noSandbox: true,
      },
      '/h/launches/x.config.json',
    );
    assert.deepEqual(args, [
      'run',
      '/m.swarm.json',
      '--no-dashboard',
      '--home',
      '/h',
      '--config',
      '/h/launches/x.config.json',
      '--identity',
      'ann',
      '--max-parallel',
      '2',
      '--baseline',
      '--only',
      'a,b',
      '--no-sandbox',
    ]);
    // --force only when the caller's lint gate forced the start (an MCP force: true).
    assert.deepEqual(runArguments({ cli: 'cli.js', manifest: '/m.swarm.json', resume: 'r1', home: '/h', cwd: '/', config: {}, force: true }, '/c.json'), [
      'resume',
      'r1',
      '--no-dashboard',
      '--home',
      '/h',
      '--config',
      '/c.json',
      '--force',
    ]);
  });

  it('starts a detached orchestrator, finds its run by pid, stops a task through the control channel and summarizes the end', async () => {
    const home = path.join(tmp, 'home');
    const manifest = path.join(tmp, 'm.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'detached',
        workdir: 'work',
        tasks: [
          script('quick', 'echo hi > hi.txt', 'test -s hi.txt || { echo hi.txt missing; exit 1; }'),
          script('slow', 'sleep 600; echo x > x.txt', 'test -s x.txt || exit 1'),
          script('not-me', 'true', 'exit 1'),
        ],
      }),
    );
    const off = testSandboxMode() === 'off';
    const run = launchDetached({ cli: CLI, manifest, home, cwd: tmp, config: { sandbox: !off }, identity: 'tester', only: ['quick', 'slow'], noSandbox: off });
    try {
      assert.ok(fs.statSync(run.configFile).mode % 0o1000 === 0o600, 'the generated config file is private');
      const info = await waitForRunStart(home, run);
      assert.equal(info.state.pid, run.pid);
      assert.equal(info.state.identity, 'tester');
      assert.deepEqual(
        info.state.tasks.map((t) => t.key),
        ['quick', 'slow'],
        '--only',
      );
      assert.equal(run.logFile, path.join(home, 'launches', `${info.state.runId}.log`));
      for (
        let i = 0;
        i < 200 &&
        !JSON.parse(fs.readFileSync(info.stateFile, 'utf8')).tasks.some((t: { key: string; status: string }) => t.key === 'slow' && t.status === 'running');
        i++
      )
        await new Promise((r) => setTimeout(r, 50));
      const { ack } = await sendControlAndWait(info.stateFile, { verb: 'stop', task: 'slow', by: 'tester' });
      assert.equal(ack?.result, 'done');
      const end = await followRun(info.stateFile, undefined, { pollMs: 50 });
      assert.equal(end.liveness, 'finished');
      const summary = summaryFromRecords(home, end);
      assert.deepEqual(
        summary.tasks.map((t) => [t.key, t.verdict, t.attempts]),
        [
          ['quick', 'PASS', 1],
          ['slow', 'CANCELLED', 1],
        ],
      );
      assert.equal(summary.runId, info.state.runId);
      assert.equal(summary.allPassed, false);
      assert.match(summary.tasks[1]?.reason ?? '', /stopped by tester/);
    } finally {
      try {
        process.kill(-run.pid, 'SIGKILL');
      } catch {
        // ended
      }
    }
  });

  it('an orchestrator that ends before its run starts is a LaunchError with its log', async () => {
    const home = path.join(tmp, 'home');
    const manifest = path.join(tmp, 'bad.swarm.json');
    fs.writeFileSync(manifest, JSON.stringify({ run_name: 'x', tasks: [script('a', 'true', 'exit 1')] }));
    const run = launchDetached({ cli: CLI, manifest, home, cwd: tmp, config: {}, only: ['nope'] });
    await assert.rejects(
      waitForRunStart(home, run),
      (e: Error) => e instanceof LaunchError && /^verdict run could not start: .*has no task "nope".*\(exit 2; log: /.test(e.message.split('\n')[0] as string),
    );
  });

  it('the reason an orchestrator gave is the first line of the error, lint advice left out, its indented lines joined', () => {
    const tail = [
      'lint: /w/m.json:1:52: info [missing-task-type] (a) Add "task_type"',
      'lint: /w/m.json:1:80: warning [underspecified-spec] (a) The spec is 14 characters',
      'cannot start /w/m.json:',
      '  engine "codex" needs the `codex` command, which is not on PATH. Install it: npm i -g @openai/codex',
      '  worktree mode needs a git repository',
    ].join('\n');
    assert.equal(
      launchFailureReason(tail),
      'cannot start /w/m.json: engine "codex" needs the `codex` command, which is not on PATH. Install it: npm i -g @openai/codex; worktree mode needs a git repository',
    );
    assert.equal(launchFailureReason('lint: /w/m.json:1:2: warning [x] y'), '');
    assert.equal(
      launchFailureReason('error: bad config ~/.config/verdict/config.json: field "x"'),
      'error: bad config ~/.config/verdict/config.json: field "x"',
    );
  });

  it('a notification shows one line that states the reason, never a line cut at its colon', () => {
    assert.equal(
      notificationLine('verdict run ended (exit 2) before its run started:\n\n  codex is not on PATH\nmore'),
      'verdict run ended (exit 2) before its run started: codex is not on PATH',
    );
    assert.equal(notificationLine('one\ntwo'), 'one');
    assert.equal(notificationLine('x'.repeat(500)).length, 400);
    assert.equal(notificationLine(''), '');
  });
});
