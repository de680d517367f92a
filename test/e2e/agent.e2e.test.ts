import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cli } from '../helpers/cli';
import { tempDir } from '../helpers/fixtures';

describe('verdict install-agent (built CLI, a temporary HOME)', function () {
  this.timeout(120000);

  it('the hooks it registers run through a shell and nudge once per session; the server it registers answers MCP; uninstall restores HOME', async () => {
    const home = tempDir('verdict-agent-e2e-');
    fs.mkdirSync(path.join(home, '.claude'));
    const settingsText = '{\n  "theme": "dark",\n  "hooks": {}\n}\n';
    fs.writeFileSync(path.join(home, '.claude', 'settings.json'), settingsText);
    const vhome = path.join(home, 'vh');
    const env = { HOME: home, VERDICT_HOME: vhome, CODEX_HOME: path.join(home, 'no-codex') };
    const inst = await cli(['install-agent'], { env });
    assert.equal(inst.exitCode, 0, inst.all);
    assert.match(inst.stdout, /installed the Verdict agent \(user scope\)/);

    const settings = JSON.parse(fs.readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8'));
    const command = settings.hooks.PreToolUse[0].hooks[0].command as string;
    const hook = (session: string, cmd: string) =>
      execa('sh', ['-c', command], {
        env,
        input: JSON.stringify({
          session_id: session,
          transcript_path: '/t.jsonl',
          cwd: home,
          hook_event_name: 'PreToolUse',
          tool_name: 'Bash',
          tool_input: { command: cmd },
          tool_use_id: 'toolu_1',
        }),
        reject: false,
      });
    const first = await hook('sess-1', 'python3 harness_eval.py');
    assert.equal(first.exitCode, 0);
    assert.equal(JSON.parse(first.stdout).hookSpecificOutput.hookEventName, 'PreToolUse');
    const again = await hook('sess-1', 'python3 harness_eval.py');
    assert.equal(again.exitCode, 0);
    assert.equal(again.stdout, '');
    const garbage = await execa('sh', ['-c', command], { env, input: 'not json at all', reject: false });
    assert.deepEqual([garbage.exitCode, garbage.stdout], [0, '']);

    const reg = JSON.parse(fs.readFileSync(path.join(home, '.claude.json'), 'utf8')).mcpServers.verdict;
    const transport = new StdioClientTransport({
      command: reg.command,
      args: reg.args,
      cwd: home,
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: 'ignore',
    });
    const client = new Client({ name: 't', version: '0' });
    await client.connect(transport);
    try {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'start_run'));
    } finally {
      await client.close();
    }

    const un = await cli(['uninstall-agent'], { env });
    assert.equal(un.exitCode, 0, un.all);
    assert.equal(fs.readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8'), settingsText);
    assert.ok(!fs.existsSync(path.join(home, '.claude.json')), 'install created it; uninstall removed it');
    assert.ok(!fs.existsSync(path.join(home, '.claude', 'skills')));
  });
});
