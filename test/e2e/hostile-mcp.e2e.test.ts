import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { callTool, connectMcp } from '../helpers/mcp';

/**
 * A hostile repository (or a prompt-injected model) driving `verdict mcp` tries to reach outside the workspace the
 * server was given: through a manifest inside the workspace whose places point out (absolute paths, `..`, symbolic
 * links committed in the repository, a workspace that is only part of a repository), and through the run ids of runs
 * that are not the workspace's.
 */
describe('hostile: the MCP server stays inside its workspace', function () {
  this.timeout(300000);

  const branches = (repo: string) => git(repo, 'branch', '--list', 'verdict/*');

  it('start_run refuses, even with force, a manifest in the workspace whose repo, workdir, remote, include or task-dir paths lead outside, naming each field at its line', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const outside = makeRepo(path.join(dir, 'outside'));
    fs.writeFileSync(path.join(dir, 'secret.env'), 'TOKEN=outside\n');
    const ws = makeRepo(path.join(dir, 'ws'));
    // What a hostile repository commits: links that lead out of the workspace.
    fs.symlinkSync(outside, path.join(ws, 'out-link'));
    fs.symlinkSync(path.join(dir, 'secret.env'), path.join(ws, 'secret-link'));
    fs.symlinkSync(path.join(dir, 'outwork'), path.join(ws, '.verdict-work'));
    fs.writeFileSync(path.join(ws, '.gitignore'), '.env\n');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-qm', 'links');

    const task = (extra: Record<string, unknown> = {}) => scriptTask('t', 'echo hi > out.txt', 'grep -q hi out.txt', extra);
    const wt = { worktrees: true };
    const cases: [string, object, RegExp][] = [
      ['repo-absolute', { ...wt, repo: outside, tasks: [task()] }, /: repo: the repository .*\/outside is outside the workspace/],
      ['repo-dotdot', { ...wt, repo: '../outside', tasks: [task()] }, /: repo: the repository .* is outside the workspace/],
      ['repo-link', { ...wt, repo: 'out-link', tasks: [task()] }, /: repo: the repository .*out-link \(it resolves to .*outside\) is outside the workspace/],
      [
        'workdir-absolute',
        { workdir: path.join(dir, 'outwork-abs'), tasks: [task()] },
        /: workdir: the task dirs' folder .*outwork-abs is outside the workspace/,
      ],
      ['workdir-dotdot', { workdir: '../outwork-up', tasks: [task()] }, /: workdir: .*outwork-up is outside the workspace/],
      [
        'workdir-through-link',
        { workdir: 'out-link/work', tasks: [task()] },
        /: workdir: .*out-link\/work \(it resolves to .*outside\/work\) is outside the workspace/,
      ],
      [
        'workdir-default-link',
        { tasks: [task()] },
        /: workdir: the task dirs' folder \(default: \.verdict-work beside the manifest\) .* \(it resolves to .*outwork\) is outside the workspace/,
      ],
      [
        'remote',
        { ...wt, pool: 'postgres://127.0.0.1:9/none', remote: outside, tasks: [task()] },
        /: remote: the pool's git remote .* is outside the workspace/,
      ],
      [
        'remote-file-url',
        { ...wt, pool: 'postgres://127.0.0.1:9/none', remote: `file://${outside}`, tasks: [task()] },
        /: remote: the pool's git remote .* is outside the workspace/,
      ],
      [
        'include-link',
        { ...wt, include: ['secret-link'], tasks: [task()] },
        /: include\[0\]: the file .*secret-link \(it resolves to .*secret\.env\) is outside the workspace/,
      ],
      ['include-dotdot', { ...wt, include: ['../secret.env'], tasks: [task()] }, /: include\[0\]: "\.\.\/secret\.env" climbs out with "\.\."/],
      ['include-absolute', { ...wt, include: [path.join(dir, 'secret.env')], tasks: [task()] }, /: include\[0\]: ".*secret\.env" is an absolute path/],
      [
        'expect-dotdot',
        { ...wt, tasks: [task({ expect_files: ['out.txt', '../../../../etc/hostname'] })] },
        /: tasks\[0\]\.expect_files\[1\]: "\.\.\/\.\.\/\.\.\/\.\.\/etc\/hostname" climbs out/,
      ],
      [
        'expect-absolute',
        { ...wt, tasks: [task({ expect_files: ['/etc/hostname'] })] },
        /: tasks\[0\]\.expect_files\[0\]: "\/etc\/hostname" is an absolute path/,
      ],
      ['protect-negated', { ...wt, protect: ['!../x/**'], tasks: [task()] }, /: protect\[0\]: "!\.\.\/x\/\*\*" climbs out/],
      ['allow-paths', { ...wt, tasks: [task({ allow_paths: ['/tmp/**'] })] }, /: tasks\[0\]\.allow_paths\[0\]: "\/tmp\/\*\*" is an absolute path/],
    ];
    const { client, errors } = await connectMcp(home, ws);
    try {
      for (const [name, manifest, expected] of cases) {
        const file = writeManifest(ws, manifest, `${name}.swarm.json`);
        const r = await callTool(client, 'start_run', { manifest: `${name}.swarm.json`, force: true });
        assert.ok(r.isError, `${name} was started: ${r.text}`);
        assert.match(r.text, /^not started: .* place(s)? outside the workspace /, `${name}: ${r.text}`);
        assert.match(r.text, new RegExp(`\\n  ${file.replace(/[.]/g, '\\.')}:\\d+:\\d+: `), `${name}: each place at its line and column: ${r.text}`);
        assert.match(r.text, expected, name);
      }
      // One manifest naming several places outside lists each of them.
      writeManifest(ws, { ...wt, repo: 'out-link', include: ['secret-link'], tasks: [task({ expect_files: ['/etc/hostname'] })] }, 'many.swarm.json');
      const many = await callTool(client, 'start_run', { manifest: 'many.swarm.json' });
      assert.ok(many.isError);
      assert.match(many.text, /names 3 places outside the workspace/, many.text);
      assert.deepEqual(errors, []);
    } finally {
      await client.close();
    }
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'no run was started');
    assert.equal(branches(outside), '', 'no branch in the outside repository');
    for (const d of ['outwork', 'outwork-abs', 'outwork-up', 'outside/work']) assert.equal(fs.existsSync(path.join(dir, d)), false, `${d} was not made`);
  });

  it('start_run refuses a worktree run where the workspace is only part of a repository, or a linked worktree of one outside it: the task branches would be made there', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // The workspace is a folder of a larger repository.
    const outer = makeRepo(path.join(dir, 'outer'), { 'sub/README.md': 'sub\n' });
    const sub = path.join(outer, 'sub');
    writeManifest(sub, { worktrees: true, tasks: [scriptTask('t', 'echo hi > out.txt', 'grep -q hi out.txt')] });
    // The workspace is a linked worktree of a repository elsewhere (its branches live in that repository's git dir).
    const main = makeRepo(path.join(dir, 'main'));
    const linked = path.join(dir, 'linked');
    git(main, 'worktree', 'add', '-q', '-b', 'side', linked);
    writeManifest(linked, { worktrees: true, tasks: [scriptTask('t', 'echo hi > out.txt', 'grep -q hi out.txt')] });

    for (const [ws, expected] of [
      [sub, /: repo: the top level of its git repository .*outer is outside the workspace .*sub/],
      [linked, /: repo: the git dir where the task branches would be made .*main\/\.git is outside the workspace .*linked/],
    ] as const) {
      const { client } = await connectMcp(home, ws);
      try {
        const r = await callTool(client, 'start_run', { manifest: 'test.swarm.json' });
        assert.ok(r.isError, `${ws}: started: ${r.text}`);
        assert.match(r.text, expected);
      } finally {
        await client.close();
      }
    }
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'no run was started');
    assert.equal(branches(outer), '');
    assert.equal(branches(main), '');
  });

  it('control_run and merge_run refuse, by id or its start and whatever the verb, a run whose manifest lies outside the workspace (directly or through a link), and resume, rerun and merge refuse one whose frozen manifest leads outside', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const ws = makeRepo(path.join(dir, 'ws'));
    const outside = makeRepo(path.join(dir, 'outside'));
    const tasks = [
      scriptTask('good', 'echo hi > out.txt', 'grep -q hi out.txt'),
      scriptTask('fails', 'echo no > a.txt', 'grep -q yes a.txt', { max_attempts: 1 }),
    ];
    // A run started from the CLI with a manifest elsewhere, whose repo is the workspace's repository.
    const elsewhere = path.join(dir, 'elsewhere');
    fs.mkdirSync(elsewhere);
    const elsewhereFile = writeManifest(elsewhere, { run_name: 'elsewhere', worktrees: true, repo: ws, tasks }, 'elsewhere.swarm.json');
    // A run started through a link inside the workspace to a manifest outside it.
    const linkedFile = writeManifest(elsewhere, { run_name: 'linked', worktrees: true, repo: ws, tasks }, 'linked.swarm.json');
    fs.symlinkSync(linkedFile, path.join(ws, 'link.swarm.json'));
    // A run started from the CLI with a manifest inside the workspace whose repo is outside it.
    writeManifest(ws, { run_name: 'inside-out', worktrees: true, repo: outside, tasks }, 'inside-out.swarm.json');
    const runIds: Record<string, string> = {};
    for (const [name, file] of [
      ['elsewhere', elsewhereFile],
      ['linked', path.join(ws, 'link.swarm.json')],
      ['inside-out', path.join(ws, 'inside-out.swarm.json')],
    ] as const) {
      const before = new Set(fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : []);
      const r = await cli(['run', file, '--home', home, '--no-dashboard']);
      const made = fs.readdirSync(path.join(home, 'runs')).filter((id) => !before.has(id));
      assert.equal(made.length, 1, `${name}: ${r.all}`);
      runIds[name] = made[0] as string;
    }
    const rowsBefore = readRows(home).length;
    assert.equal(rowsBefore, 6, 'each run ran its two tasks');
    const wsHead = git(ws, 'rev-parse', 'HEAD');
    const outsideBranches = branches(outside);

    const { client, errors } = await connectMcp(home, ws);
    try {
      for (const name of ['elsewhere', 'linked']) {
        const id = runIds[name] as string;
        for (const [verb, args] of [
          ['rerun', { task: 'fails' }],
          ['resume', {}],
          ['stop', { task: 'fails' }],
          ['pause', {}],
          ['cancel', {}],
        ] as const) {
          for (const run of [id, id.slice(0, -1)]) {
            const r = await callTool(client, 'control_run', { run, verb, ...args, force: verb === 'rerun' || verb === 'resume' ? true : undefined });
            assert.ok(r.isError, `${name} ${verb} (${run}) was accepted: ${r.text}`);
            assert.match(
              r.text,
              new RegExp(
                `^run ${id} was started from .*(elsewhere|link|linked)\\.swarm\\.json, outside the workspace .*; control_run acts only on runs whose manifest lies inside it$`,
              ),
              `${name} ${verb}: ${r.text}`,
            );
          }
        }
        const merged = await callTool(client, 'merge_run', { run: id });
        assert.ok(merged.isError, `${name}: merged: ${merged.text}`);
        assert.match(merged.text, /merge_run acts only on runs whose manifest lies inside it/);
        // Nor is it read: its check output and branches are another project's.
        const status = await callTool(client, 'run_status', { run: id });
        assert.ok(status.isError, `${name}: run_status answered: ${status.text}`);
        assert.match(status.text, /run_status acts only on runs whose manifest lies inside it/);
      }
      // Only the workspace's own run is listed.
      const listed = await callTool(client, 'list_runs', {});
      assert.ok(!listed.isError, listed.text);
      assert.deepEqual(
        listed.json.map((r: { run_id: string }) => r.run_id),
        [runIds['inside-out']],
      );
      const own = await callTool(client, 'run_status', { run: runIds['inside-out'] as string });
      assert.ok(!own.isError, own.text);
      assert.equal(own.json.run_id, runIds['inside-out']);
      const insideOut = runIds['inside-out'] as string;
      for (const [verb, args] of [
        ['rerun', { task: 'fails' }],
        ['resume', {}],
      ] as const) {
        const r = await callTool(client, 'control_run', { run: insideOut, verb, ...args, force: true });
        assert.ok(r.isError, `inside-out ${verb} was accepted: ${r.text}`);
        assert.match(
          r.text,
          new RegExp(
            `^not started: ${verb}( fails)? of run ${insideOut}: its frozen manifest .*runs/${insideOut}/manifest\\.json names 1 place outside the workspace .*\\n  repo: the repository .*outside is outside the workspace`,
          ),
          r.text,
        );
      }
      // Verbs that only slow or stop a run reach it: it is the workspace's run (and it ended, so they say so).
      const paused = await callTool(client, 'control_run', { run: insideOut, verb: 'pause' });
      assert.ok(paused.isError);
      assert.match(paused.text, /is not live/);
      const merged = await callTool(client, 'merge_run', { run: insideOut });
      assert.ok(merged.isError, merged.text);
      assert.match(merged.text, /repository .*outside is outside the workspace/);
      assert.deepEqual(errors, []);
    } finally {
      await client.close();
    }
    // Nothing ran, nothing merged, no new branch anywhere.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(readRows(home).length, rowsBefore, 'no attempt ran');
    assert.equal(git(ws, 'rev-parse', 'HEAD'), wsHead, 'nothing was merged into the workspace');
    assert.equal(branches(outside), outsideBranches);
  });
});
