import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { doctorCommand, doctorReport } from '../../extension/cli/doctor-command';
import type { Io } from '../../extension/cli/io';
import { tempDir } from '../helpers/fixtures';

const collect = () => {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l) };
  return { io, out, err };
};

/** `verdict doctor` through its command function; the machines without bubblewrap are in test/e2e/doctor.e2e.test.ts. */
describe('verdict doctor (command function)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    dir = tempDir();
    env = { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'xdg'), VERDICT_CONFIG: '' };
  });

  it('with bubblewrap (installed here): the bwrap line, git, node, engines, home, config; exit 0', async function () {
    if (process.platform !== 'linux') this.skip();
    const { io, out } = collect();
    const code = await doctorCommand({ home: path.join(dir, 'home'), env }, io);
    const text = out.join('\n');
    assert.equal(code, 0, text);
    assert.match(
      text,
      /^sandbox: bwrap \S+ \(\/\S*bwrap\): every step runs in its own PID namespace with no capability, filesystem read-only except the task dir, a scratch dir and the engine's state dirs$/m,
    );
    assert.match(text, /^git: \d+\.\d+\S* \(\/\S+\/git\)$/m);
    assert.match(text, new RegExp(`^node: ${process.version.replace(/\./g, '\\.')} `, 'm'));
    // perl is on PATH here (git needs it): the perl helper, unless the suite forces the Node one.
    assert.match(
      text,
      process.env.VERDICT_SPAWN_HELPER === 'node'
        ? /^spawn helper: node v\S+ \(\S+; VERDICT_SPAWN_HELPER=node\)$/m
        : /^spawn helper: perl v5\.\d+\.\d+ \(\/\S*perl\)$/m,
    );
    assert.match(text, /^ {2}script +\/\S+\/bash \(.*\)$/m);
    assert.match(text, /^ {2}codex +(\/\S+|codex not on PATH — npm i -g @openai\/codex)$/m);
    assert.match(text, new RegExp(`^home: ${path.join(dir, 'home')} \\(will be created\\)$`, 'm'));
    assert.match(
      text,
      new RegExp(`^config: ${path.join(dir, 'xdg', 'verdict', 'config.json')} \\(absent: built-in defaults\\): sandbox on, allow_full_access false$`, 'm'),
    );
    assert.match(text, /^a run can start here with the defaults$/m);
  });

  it('a config file that does not load: the problem names file and field; exit 1', async () => {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, '{"sandbox": "sometimes"}');
    const { io, out } = collect();
    assert.equal(await doctorCommand({ home: path.join(dir, 'home'), config: file, env }, io), 1);
    assert.match(out.join('\n'), new RegExp(`^ {2}config: ${file}:1:13: sandbox: must be true or false, got "sometimes"$`, 'm'));
  });

  it('an unwritable VERDICT_HOME: exit 1, saying so', async function () {
    if (process.getuid?.() === 0) this.skip(); // root writes anywhere
    const locked = path.join(dir, 'locked');
    fs.mkdirSync(locked, { mode: 0o500 });
    const r = await doctorReport({ home: path.join(locked, 'home'), env });
    assert.equal(r.ok, false);
    assert.equal(r.home.writable, false);
  });

  it('a home that is a file is not writable; --json prints the report as one object', async () => {
    const file = path.join(dir, 'file');
    fs.writeFileSync(file, '');
    const { io, out } = collect();
    const code = await doctorCommand({ home: path.join(file, 'home'), env, json: true }, io);
    const r = JSON.parse(out.join('\n'));
    assert.equal(code, 1);
    assert.equal(r.ok, false);
    assert.deepEqual(r.home, { path: path.join(file, 'home'), exists: false, writable: false });
    assert.ok(r.problems.some((p: string) => p.startsWith(`home: ${path.join(file, 'home')} is not writable`)));
    assert.equal(typeof r.sandbox.line, 'string');
    assert.equal(r.config.via, 'default');
    assert.ok(r.engines.some((e: { name: string }) => e.name === 'script'));
  });
});
