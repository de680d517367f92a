import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  command,
  commandHelp,
  parseCommandLine,
  runCommandLine,
  usageBlock,
  usageLine,
  type AnyCommand,
  type FlagSpec,
} from '../../extension/cli/command-line';
import { COMMANDS } from '../../extension/cli/commands';
import type { Io } from '../../extension/cli/io';
import { UsageError } from '../../extension/cli/io';
import { main } from '../../extension/cli/main';
import { postgresUrlFor } from '../../extension/cli/models-command';
import { tempDir } from '../helpers/fixtures';

const collect = () => {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l) };
  return { io, out, err, stdout: () => out.join('\n'), stderr: () => err.join('\n') };
};

/** Runs `verdict ...argv` in-process (main); nothing here reaches a handler that touches disk. */
async function verdict(...argv: string[]) {
  const c = collect();
  const code = await main(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const flagsOf = (c: AnyCommand) => Object.keys(c.flags);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A positional as the usage shows it: NAME, NAME..., [NAME], [NAME...]. */
const argShown = (a: AnyCommand['args'][number]) => (a.optional ? `[${a.name}${a.repeat ? '...' : ''}]` : `${a.name}${a.repeat ? '...' : ''}`);
/** Placeholder positionals that satisfy `c.args`, so only the flag under test can be wrong. */
const argsFor = (c: AnyCommand) => c.args.filter((a) => !a.optional).map((a) => `some-${a.name.toLowerCase()}`);

describe('CLI command table', () => {
  it('README.md\'s block "The `verdict` command" is exactly the usage the table prints', () => {
    const readme = fs.readFileSync(path.resolve('README.md'), 'utf8');
    const block = /## The `verdict` command\n\n```\n([\s\S]*?)\n```/.exec(readme)?.[1];
    assert.ok(block, 'README.md has no usage block under "The `verdict` command"');
    for (const c of COMMANDS) assert.ok(block.split('\n').includes(usageLine(c)), `README.md lacks: ${usageLine(c)}`);
    assert.equal(block, usageBlock(COMMANDS), 'regenerate the README block from usageBlock(COMMANDS)');
  });

  it('the table: unique names, one-line summaries and help, flags named without dashes, one type per flag name', () => {
    assert.equal(new Set(COMMANDS.map((c) => c.name)).size, COMMANDS.length);
    const types = new Map<string, string>();
    for (const c of COMMANDS) {
      assert.match(c.name, /^[a-z][a-z-]*$/);
      assert.ok(c.summary && !c.summary.includes('\n') && c.summary.length <= 100, `${c.name}: summary`);
      assert.ok(c.exit && !c.exit.includes('\n'), `${c.name}: exit`);
      for (const [name, f] of Object.entries(c.flags as Record<string, FlagSpec>)) {
        assert.match(name, /^[a-z][a-z0-9-]*$/, `${c.name} --${name}`);
        assert.notEqual(name, 'help');
        assert.ok(f.help && !f.help.includes('\n'), `${c.name} --${name}: help`);
        assert.equal(f.type === 'string', f.value !== undefined, `${c.name} --${name}: a string flag names its value, a boolean none`);
        assert.equal(types.get(name) ?? f.type, f.type, `--${name} is a ${types.get(name)} elsewhere`);
        types.set(name, f.type);
      }
      for (const line of commandHelp(c).split('\n')) if (!line.startsWith('usage:')) assert.ok(line.length <= 120, `${c.name} --help: ${line}`);
    }
  });

  it('verdict --help lists every command from the table; -V prints the version; no command: the help and exit 2', async () => {
    const help = await verdict('--help');
    assert.equal(help.code, 0);
    for (const c of COMMANDS)
      assert.match(
        help.stdout,
        new RegExp(`^ {2}${escape([c.name, ...c.args.map(argShown)].join(' '))}(?:.* |\n {21})${c.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
      );
    assert.equal((await verdict('-h')).stdout, help.stdout);
    for (const v of ['-V', '--version']) assert.match((await verdict(v)).stdout, /^verdict \d+\.\d+\.\d+/);
    const none = await verdict();
    assert.equal(none.code, 2);
    assert.equal(none.stdout, help.stdout);
    const unknown = await verdict('frobnicate');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^verdict: unknown command "frobnicate"\n\nusage: verdict <command>/);
    const early = await verdict('--home', 'x', 'run', 'm.json');
    assert.equal(early.code, 2);
    assert.match(early.stderr, /^verdict: unknown option --home before the command/);
  });

  for (const c of COMMANDS) {
    it(`verdict ${c.name} --help: its usage line, every flag with its help, exit codes; exit 0`, async () => {
      for (const argv of [
        [c.name, '--help'],
        [c.name, '-h'],
        [c.name, ...argsFor(c), '--help'],
      ]) {
        const r = await verdict(...argv);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, commandHelp(c));
      }
      const text = commandHelp(c);
      assert.ok(text.startsWith(`usage: ${usageLine(c)}\n`));
      for (const [name, f] of Object.entries(c.flags as Record<string, FlagSpec>))
        assert.match(
          text,
          new RegExp(`^ {2}--${name}${f.value ? ` ${f.value.replace('|', '\\|')}` : ''} +${f.help.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'),
        );
      assert.match(text, new RegExp(`^exit codes: ${c.exit.slice(0, 10)}`, 'm'));
    });

    it(`verdict ${c.name}: an unknown flag is exit 2 naming the flag, the command and what it takes`, async () => {
      const r = await verdict(c.name, ...argsFor(c), '--frobnicate');
      assert.equal(r.code, 2);
      const takes = flagsOf(c)
        .map((f) => `--${f}`)
        .join(', ');
      assert.ok(r.stderr.startsWith(`verdict ${c.name}: unknown option --frobnicate (${c.name} takes: ${takes})\n\nusage: ${usageLine(c)}`), r.stderr);
      assert.doesNotMatch(r.stderr, /To specify a positional argument/);
      const short = await verdict(c.name, ...argsFor(c), '-x');
      assert.equal(short.code, 2);
      assert.match(short.stderr, new RegExp(`^verdict ${c.name}: unknown option -x \\(`));
    });

    const foreign = COMMANDS.flatMap((o) => flagsOf(o)).find((f) => !flagsOf(c).includes(f));
    if (foreign) {
      it(`verdict ${c.name} --${foreign} (a flag of another command) is exit 2 naming the commands that take it`, async () => {
        const owners = COMMANDS.filter((o) => flagsOf(o).includes(foreign))
          .map((o) => o.name)
          .join(', ');
        const spec = COMMANDS.find((o) => flagsOf(o).includes(foreign))!.flags[foreign] as FlagSpec;
        const r = await verdict(c.name, ...argsFor(c), `--${foreign}`, ...(spec.type === 'string' ? ['v'] : []));
        assert.equal(r.code, 2);
        assert.match(
          r.stderr,
          new RegExp(`^verdict ${c.name}: unknown option --${foreign} \\(${c.name} takes: [^;]*; --${foreign} is an option of ${owners}\\)`),
        );
      });
    }

    it(`verdict ${c.name}: ${c.args.length ? 'a missing or an extra' : 'an'} argument is exit 2 with the usage line`, async () => {
      const extra = await verdict(c.name, ...argsFor(c), 'one', 'two', ...(c.args.some((a) => a.repeat) ? ['--frobnicate'] : []));
      assert.equal(extra.code, 2);
      if (c.args.some((a) => a.repeat)) assert.match(extra.stderr, /unknown option --frobnicate/);
      else if (c.args.length) {
        // An optional positional takes "one"; only what is left over is unexpected.
        const left = c.args.some((a) => a.optional) ? '"two"' : '"one" "two"';
        assert.match(extra.stderr, new RegExp(`^verdict ${c.name}: unexpected argument ${left} \\(takes ${escape(c.args.map(argShown).join(' '))}\\)`));
      } else
        assert.match(
          extra.stderr,
          new RegExp(`^verdict ${c.name}: takes no arguments, got "one" "two"\n\nusage: ${usageLine(c).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
        );
      const required = c.args.find((a) => !a.optional);
      if (required) {
        const missing = await verdict(c.name);
        assert.equal(missing.code, 2);
        assert.match(missing.stderr, new RegExp(`^verdict ${c.name}: missing ${required.name}`));
      }
    });
  }

  it('the flag from the issue: verdict run --free is refused, naming catalog', async () => {
    const r = await verdict('run', 'x.swarm.json', '--free');
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^verdict run: unknown option --free \(run takes: --max-parallel, --identity, --home, --config, --baseline, --no-sandbox, --no-dashboard, --force, --only, --pool, --remote; --free is an option of catalog\)/,
    );
  });

  it("a flag without its value, or a boolean given one: exit 2 with parseArgs' first sentence only", async () => {
    const port = await verdict('hud', '--port');
    assert.equal(port.code, 2);
    assert.match(port.stderr, /^verdict hud: Option '--port <value>' argument missing\n\nusage: verdict hud /);
    const json = await verdict('lint', 'a.json', '--json=yes');
    assert.equal(json.code, 2);
    assert.match(json.stderr, /^verdict lint: Option '--json' does not take an argument\n/);
    for (const r of [port, json]) assert.doesNotMatch(r.stderr, /'--'/);
  });

  it("a handler's own flag check is that command's usage error (exit 2)", async () => {
    const r = await verdict('clean', '--older-than', 'soon', '--home', tempDir());
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^verdict clean: --older-than must be a number of days ≥ 0, got "soon"\n\nusage: verdict clean /);
  });
});

describe('CLI command table: the machinery (command-line.ts)', () => {
  const calls: unknown[] = [];
  const copy = command({
    name: 'copy',
    args: [{ name: 'FROM' }, { name: 'TO', repeat: true, optional: true }],
    flags: { force: { type: 'boolean', help: 'overwrite' }, mode: { type: 'string', value: 'M', help: 'file mode', default: '644' } },
    summary: 'copy things',
    exit: '0 copied',
    run: async ({ args, flags }) => {
      const force: boolean = flags.force;
      const mode: string | undefined = flags.mode;
      calls.push({ args, force, mode });
      if (mode === 'bad') throw new UsageError('--mode must be octal');
      return 0;
    },
  });
  const table = [copy];
  beforeEach(() => {
    calls.length = 0;
  });

  it('positionals: optional and repeated ones; flags in any order; a boolean absent is false, a string undefined', async () => {
    const io = collect().io;
    assert.equal(await runCommandLine(table, ['copy', 'a'], io, '1'), 0);
    assert.equal(await runCommandLine(table, ['copy', '--force', 'a', 'b', '--mode', '600', 'c'], io, '1'), 0);
    assert.deepEqual(calls, [
      { args: ['a'], force: false, mode: undefined },
      { args: ['a', 'b', 'c'], force: true, mode: '600' },
    ]);
    assert.equal(usageLine(copy), 'verdict copy FROM [TO...] [--force] [--mode M]');
    assert.match(commandHelp(copy), /^ {2}--mode M {11}file mode \(default: 644\)$/m);
    assert.throws(() => parseCommandLine(table, ['copy']), /missing FROM/);
  });

  it("a UsageError thrown by the handler names the command; '--' ends the options", async () => {
    await assert.rejects(
      runCommandLine(table, ['copy', 'a', '--mode', 'bad'], collect().io, '1'),
      (e: Error & { command?: AnyCommand }) => e.command === copy && e.message === '--mode must be octal',
    );
    const p = parseCommandLine(table, ['copy', '--', '--force']);
    assert.equal(p.kind, 'run');
    assert.deepEqual(p.kind === 'run' && [p.args, p.flags.force], [['--force'], false]);
  });
});

describe('verdict models --pg: the config file in force', () => {
  it('reads postgres_url from --config, else $VERDICT_CONFIG, else the default file; VERDICT_PG_URL wins', () => {
    const dir = tempDir();
    const write = (name: string, url: string) => {
      const f = path.join(dir, name);
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, JSON.stringify({ postgres_url: url }));
      return f;
    };
    write('xdg/verdict/config.json', 'postgres://default');
    const fromEnv = write('env.json', 'postgres://env');
    const fromFlag = write('flag.json', 'postgres://flag');
    const env = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'xdg') };
    assert.equal(postgresUrlFor(undefined, env), 'postgres://default');
    assert.equal(postgresUrlFor(undefined, { ...env, VERDICT_CONFIG: fromEnv }), 'postgres://env');
    assert.equal(postgresUrlFor(fromFlag, { ...env, VERDICT_CONFIG: fromEnv }), 'postgres://flag');
    assert.equal(postgresUrlFor(fromFlag, { ...env, VERDICT_PG_URL: 'postgres://pg-url' }), 'postgres://pg-url');
    assert.equal(postgresUrlFor(undefined, { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'none') }), null);
    assert.throws(
      () => postgresUrlFor(undefined, { ...env, VERDICT_CONFIG: path.join(dir, 'missing.json') }),
      /the config file named by \$VERDICT_CONFIG does not exist/,
    );
  });
});
