import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { callTool, connectMcp } from '../helpers/mcp';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const connect = connectMcp;
const call = callTool;

describe('verdict mcp: the MCP server over stdio, driven by the SDK client', function () {
  this.timeout(180000);

  it("lints, starts a run, polls it to its end, reads each task's verdict and check output, merges, and reads the scoreboard", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    writeManifest(repo, {
      run_name: 'mcp-driven',
      worktrees: true,
      tasks: [
        scriptTask('good', 'echo hello > out.txt', 'grep -q hello out.txt'),
        scriptTask('bad', 'echo nope > other.txt', 'echo "the check wants yes" >&2; grep -q yes other.txt'),
      ],
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'manifest');
    const { client, errors, stderr } = await connect(home, repo);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, ['control_run', 'lint_manifest', 'list_runs', 'merge_run', 'plan', 'run_status', 'scoreboard', 'start_run']);
      const resources = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(resources.includes('verdict://schemas/manifest.schema.json'), resources.join(', '));
      const schema = await client.readResource({ uri: 'verdict://schemas/manifest.schema.json' });
      assert.ok((schema.contents[0] as { text: string }).text.includes('"tasks"'));
      assert.ok(
        resources.some((u) => u.startsWith('verdict://templates/')),
        'the templates are resources',
      );

      const lint = await call(client, 'lint_manifest', { manifest: 'test.swarm.json' });
      assert.ok(!lint.isError, lint.text);
      assert.equal(lint.json.errors, 0, lint.text);

      // The forecast before launch: no history yet for the script engine.
      const plan = await call(client, 'plan', { manifest: 'test.swarm.json' });
      assert.ok(!plan.isError, plan.text);
      assert.deepEqual(
        (plan.json.tasks as { key: string; basis: string }[]).map((t) => [t.key, t.basis]),
        [
          ['good', 'none'],
          ['bad', 'none'],
        ],
      );
      assert.equal((plan.json.total as { withoutHistory: number }).withoutHistory, 2);

      const started = await call(client, 'start_run', { manifest: 'test.swarm.json' });
      assert.ok(!started.isError, started.text);
      const runId = started.json.run_id as string;
      assert.deepEqual(started.json.tasks, ['good', 'bad']);

      let status: any;
      for (let i = 0; i < 600; i++) {
        status = (await call(client, 'run_status', { run: runId })).json;
        if (status.state !== 'running') break;
        await sleep(200);
      }
      assert.equal(status.state, 'finished', JSON.stringify(status));
      const good = status.tasks.find((t: any) => t.key === 'good');
      const bad = status.tasks.find((t: any) => t.key === 'bad');
      assert.equal(good.status, 'PASS');
      assert.match(good.branch, /^verdict\//);
      assert.equal(bad.status, 'FAIL');
      assert.match(bad.check_output, /the check wants yes/);

      // The live-run verbs on a run that ended are refused with why; rerun of an unknown task names the tasks.
      const paused = await call(client, 'control_run', { run: runId, verb: 'pause' });
      assert.ok(paused.isError);
      assert.match(paused.text, /not live/);
      const unknown = await call(client, 'control_run', { run: runId, verb: 'rerun', task: 'nope' });
      assert.ok(unknown.isError);
      assert.match(unknown.text, /no task nope \(tasks: good, bad\)/);

      const merged = await call(client, 'merge_run', { run: runId, tasks: ['good'] });
      assert.ok(!merged.isError, merged.text);
      assert.equal(fs.readFileSync(path.join(repo, 'out.txt'), 'utf8'), 'hello\n', 'the passed work is on the current branch');

      const board = await call(client, 'scoreboard', {});
      assert.ok(!board.isError, board.text);
      // The script engine stamps no model: its attempts are quarantined (credited to no model), not ranked.
      assert.deepEqual(
        board.json.quarantined.map((q: any) => [q.task_type, q.tasks, q.passed]),
        [['test', 2, 1]],
        board.text,
      );
      assert.match(board.text, /quarantined: \d+ attempt\(s\) with no stamped model/);

      assert.deepEqual(errors, [], 'no transport error: stdout carried only protocol messages');
    } finally {
      await client.close();
    }
    assert.match(stderr(), /serving on stdio/);
  });

  it("start_run and control_run refuse a manifest with a lint error (listed file:line:column [rule]) unless force: true; a forced run's rows say forced", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('trusted', 'echo "I did nothing"', 'true'),
        scriptTask('fails', 'echo no > a.txt', 'grep -q yes a.txt || exit 1', { max_attempts: 1 }),
      ],
    });
    const line =
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('"check": "true"')) + 1;
    const { client, errors } = await connect(home, repo);
    const finished = async (runId: string) => {
      for (let i = 0; i < 600; i++) {
        const status = (await call(client, 'run_status', { run: runId })).json;
        if (status.state !== 'running') return status;
        await sleep(200);
      }
      throw new Error(`run ${runId} did not end`);
    };
    try {
      const refused = await call(client, 'start_run', { manifest: 'test.swarm.json' });
      assert.ok(refused.isError, refused.text);
      assert.match(
        refused.text,
        new RegExp(`^not started: ${file.replace(/[.]/g, '\\.')}: 1 lint error \\(fix them and lint again; force: true starts it anyway`),
      );
      assert.match(
        refused.text,
        new RegExp(`\\n  ${file.replace(/[.]/g, '\\.')}:${line}:\\d+: error \\[check-cannot-fail\\] \\(trusted\\) This check always exits 0`),
      );
      assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'no run was started');
      assert.equal(git(repo, 'branch', '--list', 'verdict/*'), '');

      const started = await call(client, 'start_run', { manifest: 'test.swarm.json', force: true });
      assert.ok(!started.isError, started.text);
      assert.equal(started.json.forced, true);
      const runId = started.json.run_id as string;
      assert.equal((await finished(runId)).state, 'finished');
      const rows = () =>
        fs
          .readFileSync(path.join(home, 'runs.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(
        rows()
          .map((r) => [r.task_key, r.verdict, r.forced])
          .sort(),
        [
          ['fails', 'FAIL', true],
          ['trusted', 'PASS', true],
        ],
      );

      // Resuming the run that ended starts its frozen manifest: refused the same way, unless force.
      const resume = await call(client, 'control_run', { run: runId, verb: 'resume' });
      assert.ok(resume.isError, resume.text);
      assert.match(resume.text, new RegExp(`^not started: resume of run ${runId} \\(its frozen manifest, from .*\\): 1 lint error`));
      assert.match(resume.text, /runs\/[^/]+\/manifest\.json:\d+:\d+: error \[check-cannot-fail\] \(trusted\)/);
      assert.equal(rows().length, 2, 'nothing ran');
      const forced = await call(client, 'control_run', { run: runId, verb: 'rerun', task: 'fails', force: true });
      assert.ok(!forced.isError, forced.text);
      assert.equal(forced.json.forced, true);
      await finished(runId);
      assert.deepEqual(
        rows()
          .filter((r) => r.task_key === 'fails')
          .map((r) => [r.attempt, r.forced]),
        [
          [1, true],
          [2, true],
        ],
      );
      assert.deepEqual(errors, []);
    } finally {
      await client.close();
    }
  });

  it('an engine "auto" manifest without a route of its own is linted, forecast and started with the config file\'s route, as its run loads it', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    // The config of the suite (sandbox off where none can run) plus an engine and the route an auto task picks from.
    const base = process.env.VERDICT_CONFIG ? (JSON.parse(fs.readFileSync(process.env.VERDICT_CONFIG, 'utf8')) as Record<string, unknown>) : {};
    const config = path.join(dir, 'config.json');
    const cheap = { binary: 'bash', argv: ['-c', '{spec}'], install: 'a test fixture', output: 'claude', retry_context: 'file', model: 'acme/cheap' };
    fs.writeFileSync(config, JSON.stringify({ ...base, engines: { cheap }, route: { from: ['cheap:acme/cheap'], explore: 0 } }));
    writeManifest(repo, {
      run_name: 'mcp-auto',
      engine: 'auto',
      tasks: [{ key: 'routed', task_type: 'parser', spec: 'echo ok > out.txt', check: 'grep -q ok out.txt', verified: 'out.txt says ok' }],
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'manifest');
    const { client, errors } = await connect(home, repo, { VERDICT_CONFIG: config });
    try {
      const plan = await call(client, 'plan', { manifest: 'test.swarm.json' });
      assert.ok(!plan.isError, plan.text);
      const tasks = plan.json.tasks as { key: string; engine: string; model: string; basis: string }[];
      assert.deepEqual(
        tasks.map((t) => [t.key, t.engine, t.model, t.basis]),
        [['routed', 'cheap', 'acme/cheap', 'none']],
      );
      assert.match((plan.json.routes as Record<string, { line: string }>).routed!.line, /cheap/);
      const lint = await call(client, 'lint_manifest', { manifest: 'test.swarm.json' });
      assert.ok(!lint.isError, lint.text);
      assert.equal(lint.json.errors, 0, lint.text);
      const started = await call(client, 'start_run', { manifest: 'test.swarm.json' });
      assert.ok(!started.isError, started.text);
      let status: any;
      for (let i = 0; i < 600; i++) {
        status = (await call(client, 'run_status', { run: started.json.run_id as string })).json;
        if (status.state !== 'running') break;
        await sleep(200);
      }
      assert.equal(status.state, 'finished', JSON.stringify(status));
      assert.deepEqual(
        status.tasks.map((t: any) => [t.key, t.status]),
        [['routed', 'PASS']],
      );
      assert.deepEqual(errors, []);
    } finally {
      await client.close();
    }
  });

  it('refuses hostile and malformed calls with a clear tool error and goes on serving', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const outside = writeManifest(dir, { run_name: 'outside', tasks: [scriptTask('x', 'true', 'true')] });
    fs.symlinkSync(outside, path.join(repo, 'link.swarm.json'));
    const { client, errors } = await connect(home, repo);
    try {
      for (const manifest of [outside, '../test.swarm.json', 'link.swarm.json']) {
        for (const tool of ['lint_manifest', 'plan', 'start_run']) {
          const r = await call(client, tool, { manifest });
          assert.ok(r.isError, `${tool} ${manifest}: ${r.text}`);
          assert.match(r.text, /outside the workspace/);
        }
      }
      assert.ok(!fs.existsSync(path.join(home, 'runs')), 'no run was started');
      const missing = await call(client, 'lint_manifest', { manifest: 'nope.swarm.json' });
      assert.ok(missing.isError);
      assert.match(missing.text, /does not exist/);
      // Malformed arguments: the SDK's validation answers; the server lives on.
      for (const [tool, args] of [
        ['lint_manifest', { manifest: 42 }],
        ['lint_manifest', {}],
        ['run_status', { run: '../../etc' }],
        ['control_run', { run: 'x', verb: 'explode' }],
        ['start_run', { manifest: 'test.swarm.json', max_parallel: -1 }],
      ] as const) {
        let answered: string;
        try {
          const r = await call(client, tool, args as Record<string, unknown>);
          assert.ok(r.isError, `${tool} ${JSON.stringify(args)} was accepted: ${r.text}`);
          answered = r.text;
        } catch (e) {
          answered = (e as Error).message;
        }
        assert.match(answered, /invalid|expected|required|run id|option/i, `${tool}: ${answered}`);
      }
      const noRun = await call(client, 'run_status', { run: 'nosuchrun' });
      assert.ok(noRun.isError);
      assert.match(noRun.text, /no run nosuchrun/);
      const alive = await call(client, 'list_runs', {});
      assert.ok(!alive.isError);
      assert.deepEqual(alive.json, []);
      assert.deepEqual(errors, []);
    } finally {
      await client.close();
    }
  });

  it('writes nothing but JSON-RPC on stdout, even for a line that is not JSON', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const lines = [
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      'this is not json',
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'lint_manifest', arguments: { manifest: '/etc/passwd' } } }),
      JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }),
      JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
    ];
    const r = await execa(process.execPath, [CLI, 'mcp', '--home', path.join(dir, 'home'), '--workspace', repo], {
      input: lines.join('\n') + '\n',
      reject: false,
    });
    assert.equal(r.exitCode, 0, r.stderr);
    const out = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { jsonrpc: string; id?: number; result?: any; error?: any });
    assert.ok(out.every((m) => m.jsonrpc === '2.0'));
    const byId = new Map(out.map((m) => [m.id, m]));
    assert.match(JSON.stringify(byId.get(2)), /outside the workspace/);
    assert.ok(byId.get(3)?.error || byId.get(3)?.result?.isError, JSON.stringify(byId.get(3)));
    assert.equal(byId.get(4)?.result.tools.length, 8);
  });

  it('verdict mcp --workspace naming no folder is bad input (exit 2), before any protocol', async () => {
    const r = await execa(process.execPath, [CLI, 'mcp', '--workspace', path.join(tempDir(), 'missing')], { input: '', reject: false });
    assert.equal(r.exitCode, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /--workspace: .*does not exist/);
  });
});
