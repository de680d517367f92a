import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentTargets, hookEntries, installAgent, uninstallAgent } from '../../extension/cli/agent/install';
import { EDIT_LOOP_EDITS, hookAnswer, NUDGE_TEXT } from '../../extension/cli/agent/nudge';
import { shortHost } from '../../extension/core/host/hostname';
import type { Io } from '../../extension/cli/io';

const launch = { node: '/usr/bin/node', cli: '/opt/verdict with space/dist/cli.js' };
const quiet: Io = { out: () => undefined, err: () => undefined };

function temp(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Every file and folder under `root`: relative path → content (folders: null). */
function snapshot(root: string): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      const rel = path.relative(root, p);
      if (fs.statSync(p).isDirectory()) {
        out.set(rel + '/', null);
        walk(p);
      } else out.set(rel, fs.readFileSync(p, 'latin1'));
    }
  };
  walk(root);
  return out;
}

/** A HOME as a user has it: settings with their own hooks (tabs, a trailing comment-free odd layout), other skills, MCP servers, Codex. */
function livedInHome(): string {
  const home = temp('verdict-agent-home-');
  fs.mkdirSync(path.join(home, '.claude', 'skills', 'mine'), { recursive: true });
  fs.writeFileSync(path.join(home, '.claude', 'skills', 'mine', 'SKILL.md'), '---\nname: mine\ndescription: my own\n---\nhello\n');
  fs.writeFileSync(
    path.join(home, '.claude', 'settings.json'),
    '{\n\t"model": "opus",\n\t"hooks": {\n\t\t"PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "~/bin/audit.sh" } ] } ],\n\t\t"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]\n\t},\n\t"permissions": {"allow": ["Bash(ls:*)"]}\n}',
  );
  fs.writeFileSync(
    path.join(home, '.claude.json'),
    JSON.stringify({ numStartups: 12, mcpServers: { other: { type: 'stdio', command: 'other-mcp', args: [] } }, projects: { '/x': { allowedTools: [] } } }),
  );
  fs.mkdirSync(path.join(home, '.codex'));
  fs.writeFileSync(path.join(home, '.codex', 'config.toml'), 'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n');
  return home;
}

describe('verdict install-agent / uninstall-agent', () => {
  it('installs the skill, both hooks, the MCP server (Claude Code and Codex) next to what the user has; twice is once; uninstall leaves every byte as it was', () => {
    const home = livedInHome();
    const before = snapshot(home);
    const t = agentTargets(false, home, { HOME: home });
    assert.equal(t.codexDir, path.join(home, '.codex'));
    installAgent(t, launch, quiet);

    const skill = fs.readFileSync(path.join(home, '.claude', 'skills', 'verdict', 'SKILL.md'), 'utf8');
    assert.match(skill, /^---\nname: verdict\ndescription: /);
    assert.ok(fs.existsSync(path.join(home, '.codex', 'skills', 'verdict', 'SKILL.md')));
    const settings = JSON.parse(fs.readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8'));
    assert.equal(settings.model, 'opus');
    assert.deepEqual(
      settings.hooks.PreToolUse.map((g: any) => g.matcher),
      ['Bash', 'Bash'],
    );
    assert.equal(settings.hooks.PreToolUse[0].hooks[0].command, '~/bin/audit.sh', "the user's hook is first and untouched");
    assert.equal(settings.hooks.PreToolUse[1].hooks[0].command, "/usr/bin/node '/opt/verdict with space/dist/cli.js' agent-hook pre-bash");
    assert.equal(settings.hooks.PostToolUse[0].matcher, 'Edit|MultiEdit|Write');
    assert.deepEqual(settings.hooks.Stop, [{ hooks: [{ type: 'command', command: 'notify-send done' }] }]);
    const claudeJson = JSON.parse(fs.readFileSync(path.join(home, '.claude.json'), 'utf8'));
    assert.deepEqual(claudeJson.mcpServers.verdict, { type: 'stdio', command: '/usr/bin/node', args: ['/opt/verdict with space/dist/cli.js', 'mcp'], env: {} });
    assert.equal(claudeJson.numStartups, 12);
    const toml = fs.readFileSync(path.join(home, '.codex', 'config.toml'), 'utf8');
    assert.ok(toml.startsWith('model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'), toml);
    assert.match(toml, /\[mcp_servers\.verdict\]\ncommand = "\/usr\/bin\/node"\nargs = \["\/opt\/verdict with space\/dist\/cli\.js", "mcp"\]/);

    const installed = snapshot(home);
    installAgent(t, launch, quiet);
    assert.deepEqual(snapshot(home), installed, 'a second install changes nothing');

    uninstallAgent(t, quiet);
    assert.deepEqual(snapshot(home), before, 'byte-identical after uninstall');
    uninstallAgent(t, quiet);
    assert.deepEqual(snapshot(home), before, 'a second uninstall is a no-op');
  });

  it("uninstall after the user changed the files: only Verdict's entries go, the user's later changes stay", () => {
    const home = livedInHome();
    const t = agentTargets(false, home, { HOME: home });
    installAgent(t, launch, quiet);
    const sf = path.join(home, '.claude', 'settings.json');
    fs.writeFileSync(sf, fs.readFileSync(sf, 'utf8').replace('"model": "opus"', '"model": "sonnet"'));
    const cj = path.join(home, '.claude.json');
    fs.writeFileSync(cj, fs.readFileSync(cj, 'utf8').replace(/"numStartups": ?12/, '"numStartups": 13'));
    const ct = path.join(home, '.codex', 'config.toml');
    fs.appendFileSync(ct, '\n[mcp_servers.later]\ncommand = "later"\n');
    uninstallAgent(t, quiet);
    const settings = JSON.parse(fs.readFileSync(sf, 'utf8'));
    assert.equal(settings.model, 'sonnet');
    assert.deepEqual(settings.hooks.PreToolUse, [{ matcher: 'Bash', hooks: [{ type: 'command', command: '~/bin/audit.sh' }] }]);
    assert.equal(settings.hooks.PostToolUse, undefined, 'the event install created is gone with its last handler');
    assert.doesNotMatch(fs.readFileSync(sf, 'utf8'), /agent-hook/);
    const claudeJson = JSON.parse(fs.readFileSync(cj, 'utf8'));
    assert.deepEqual(Object.keys(claudeJson.mcpServers), ['other']);
    assert.equal(claudeJson.numStartups, 13);
    assert.equal(fs.readFileSync(ct, 'utf8'), 'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[mcp_servers.later]\ncommand = "later"\n');
    assert.ok(fs.existsSync(path.join(home, '.claude', 'skills', 'mine', 'SKILL.md')));
    assert.ok(!fs.existsSync(path.join(home, '.claude', 'skills', 'verdict')));
  });

  it('an empty HOME: install creates what it needs (no Codex: none for it), uninstall leaves the HOME empty again', () => {
    const home = temp('verdict-agent-empty-');
    const t = agentTargets(false, home, { HOME: home });
    assert.equal(t.codexDir, null);
    installAgent(t, launch, quiet);
    assert.ok(fs.existsSync(path.join(home, '.claude', 'settings.json')));
    assert.ok(!fs.existsSync(path.join(home, '.codex')));
    uninstallAgent(t, quiet);
    assert.deepEqual([...snapshot(home).keys()], []);
  });

  it('--project writes .claude/ and .mcp.json in the folder, and takes them back', () => {
    const repo = temp('verdict-agent-project-');
    fs.writeFileSync(path.join(repo, '.mcp.json'), '{ "mcpServers": {} }\n');
    const before = snapshot(repo);
    const t = agentTargets(true, repo, { HOME: '/nonexistent' });
    installAgent(t, launch, quiet);
    assert.ok(fs.existsSync(path.join(repo, '.claude', 'skills', 'verdict', 'SKILL.md')));
    assert.equal(JSON.parse(fs.readFileSync(path.join(repo, '.mcp.json'), 'utf8')).mcpServers.verdict.args[1], 'mcp');
    uninstallAgent(t, quiet);
    assert.deepEqual(snapshot(repo), before);
  });

  it('a settings file that is not a JSON object stops the install before anything is written, naming the file', () => {
    const home = temp('verdict-agent-bad-');
    fs.mkdirSync(path.join(home, '.claude'));
    fs.writeFileSync(path.join(home, '.claude', 'settings.json'), '{ "hooks": ');
    const before = snapshot(home);
    assert.throws(() => installAgent(agentTargets(false, home, { HOME: home }), launch, quiet), /settings\.json: not a JSON object/);
    assert.deepEqual(snapshot(home), before);
    fs.writeFileSync(path.join(home, '.claude', 'settings.json'), '{ "hooks": [] }');
    assert.throws(() => installAgent(agentTargets(false, home, { HOME: home }), launch, quiet), /"hooks" is not an object/);
  });

  it('registers hook commands a shell runs as this node and this CLI', () => {
    assert.deepEqual(
      hookEntries({ node: '/n', cli: "/it's/cli.js" }).map((h) => h.command),
      ["/n '/it'\\''s/cli.js' agent-hook pre-bash", "/n '/it'\\''s/cli.js' agent-hook post-edit"],
    );
  });
});

/** A PreToolUse / PostToolUse payload as Claude Code documents it (hooks reference: common fields, tool_name, tool_input, tool_use_id). */
function payload(event: 'PreToolUse' | 'PostToolUse', session: string, tool: string, input: Record<string, unknown>): string {
  return JSON.stringify({
    session_id: session,
    transcript_path: `/home/u/.claude/projects/-w/${session}.jsonl`,
    cwd: '/w',
    permission_mode: 'default',
    hook_event_name: event,
    tool_name: tool,
    tool_input: input,
    tool_use_id: 'toolu_01',
    ...(event === 'PostToolUse' ? { tool_response: { success: true } } : {}),
  });
}

describe('the nudge hooks (verdict agent-hook)', () => {
  it('pre-bash: a provider call or harness script outside a live run is nudged once per session; other commands never', () => {
    const home = temp('verdict-hook-');
    const curl = payload('PreToolUse', 's1', 'Bash', { command: 'curl -s https://api.openai.com/v1/chat/completions -d @req.json', description: 'call' });
    const first = hookAnswer('pre-bash', curl, home, {});
    assert.deepEqual(JSON.parse(first!), { hookSpecificOutput: { hookEventName: 'PreToolUse', additionalContext: NUDGE_TEXT } });
    assert.equal(hookAnswer('pre-bash', curl, home, {}), null, 'once per session');
    assert.equal(
      hookAnswer('pre-bash', payload('PreToolUse', 's1', 'Bash', { command: 'python3 scripts/eval_persona.py' }), home, {}),
      null,
      'once per session, whatever the command',
    );
    assert.ok(
      hookAnswer('pre-bash', payload('PreToolUse', 's2', 'Bash', { command: 'node tools/smoke-test.mjs --all' }), home, {}),
      'a new session is nudged again',
    );
    for (const command of ['ls -la', 'npm test', 'git diff', 'verdict run x.swarm.json', 'node dist/cli.js run probe.swarm.json', 'cat eval.py']) {
      assert.equal(hookAnswer('pre-bash', payload('PreToolUse', `s-${command}`, 'Bash', { command }), home, {}), null, command);
    }
    for (const junk of ['', 'not json', '[]', 'null', '{"tool_input": 5}', JSON.stringify({ session_id: 's9', tool_input: { command: 42 } })])
      assert.equal(hookAnswer('pre-bash', junk, home, {}), null, junk);
  });

  it('post-edit: the edit loop (8 edits over 3 files) is nudged once; fewer files or edits are not', () => {
    const home = temp('verdict-hook-');
    const edit = (session: string, file: string) =>
      hookAnswer('post-edit', payload('PostToolUse', session, 'Edit', { file_path: file, old_string: 'a', new_string: 'b' }), home, {});
    for (let i = 0; i < 20; i++) assert.equal(edit('one-file', '/w/a.ts'), null, 'many edits of one file are not a loop across files');
    const answers = Array.from({ length: EDIT_LOOP_EDITS + 3 }, (_, i) => edit('loop', `/w/f${i % 3}.ts`));
    assert.deepEqual(
      answers.map((a) => a !== null),
      answers.map((_, i) => i === EDIT_LOOP_EDITS - 1),
    );
    assert.equal(JSON.parse(answers[EDIT_LOOP_EDITS - 1]!).hookSpecificOutput.hookEventName, 'PostToolUse');
  });

  it('no nudge while a Verdict run is live; an unwritable home is silence, not an error', () => {
    const home = temp('verdict-hook-');
    const dir = path.join(home, 'runs', 'r1');
    fs.mkdirSync(dir, { recursive: true });
    const now = Date.now();
    fs.writeFileSync(
      path.join(dir, 'state.json'),
      JSON.stringify({
        version: 1,
        runId: 'r1',
        runName: 'live',
        manifestFile: '/m',
        identity: 'me',
        host: shortHost(),
        pid: process.pid,
        status: 'running',
        startedAt: now,
        heartbeatAt: now,
        endedAt: null,
        maxParallel: 1,
        worktrees: false,
        repo: null,
        baseRef: null,
        baseSha: null,
        tasks: [],
      }),
    );
    const curl = payload('PreToolUse', 'live', 'Bash', { command: 'curl https://api.anthropic.com/v1/messages' });
    assert.equal(hookAnswer('pre-bash', curl, home, {}), null);
    // A run's worker (Claude Code as an engine reads the same user hooks; its sandbox hides VERDICT_HOME): never nudged.
    assert.equal(
      hookAnswer('pre-bash', payload('PreToolUse', 'worker', 'Bash', { command: 'curl https://api.anthropic.com/v1/messages' }), temp('verdict-hook-'), {
        VERDICT_RUN_ID: 'r1',
      }),
      null,
    );
    for (let i = 0; i < 10; i++)
      assert.equal(hookAnswer('post-edit', payload('PostToolUse', 'live', 'Write', { file_path: `/w/${i}`, content: '' }), home, {}), null);
    const file = path.join(temp('verdict-hook-'), 'a-file');
    fs.writeFileSync(file, '');
    assert.equal(hookAnswer('pre-bash', payload('PreToolUse', 'x', 'Bash', { command: 'curl https://openrouter.ai/api/v1/chat/completions' }), file, {}), null);
  });
});
