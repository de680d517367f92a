import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import manifestSchema from '../../schemas/manifest.schema.json';
import { loadConfig } from '../../extension/core/config/config';
import { MAX_TIMER_MS, MAX_TIMER_S, timerDelay } from '../../extension/core/fs/timer';
import { MAX_PARALLEL } from '../../extension/core/manifest/limits';
import { LineIndex } from '../../extension/core/manifest/positions';
import { formatProblem, ManifestError } from '../../extension/core/manifest/types';
import { supervise } from '../../extension/core/process/supervisor';
import { Scheduler } from '../../extension/core/run/scheduler';
import { tempDir } from '../helpers/fixtures';
import { loadManifest, parseManifest } from '../../extension/core/run/manifest';

const FILE = '/work/x/ranges.swarm.json';
const engines = new Set(['codex', 'script', 'claude']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Schema = { type?: unknown; minimum?: number; exclusiveMinimum?: number; maximum?: number; [k: string]: unknown };

/** Every node of the schema whose type is number or integer, by its schema path (`#/properties/max_parallel`, …). */
function numericFields(node: unknown, at = '#', out = new Map<string, Schema>()): Map<string, Schema> {
  if (!node || typeof node !== 'object') return out;
  if (Array.isArray(node)) {
    node.forEach((n, i) => numericFields(n, `${at}/${i}`, out));
    return out;
  }
  const s = node as Schema;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes('number') || types.includes('integer')) out.set(at, s);
  for (const [k, v] of Object.entries(s)) if (k !== 'examples' && k !== 'default') numericFields(v, `${at}/${k}`, out);
  return out;
}

const task = (extra: Record<string, unknown> = {}) => ({ key: 'a', engine: 'script', spec: 'echo hi > out.txt', check: 'test -s out.txt', ...extra });

/**
 * Each numeric field of the manifest schema: where it sits in a manifest (a JSON path) and a manifest that holds `v`
 * there and is valid otherwise. A field added to the schema without a row here fails the first test.
 */
const FIELDS: Record<string, { at: (string | number)[]; manifest: (v: number) => unknown }> = {
  '#/properties/max_parallel': { at: ['max_parallel'], manifest: (v) => ({ max_parallel: v, tasks: [task()] }) },
  '#/properties/logins/additionalProperties/properties/max_parallel': {
    at: ['logins', 'sub', 'max_parallel'],
    manifest: (v) => ({ logins: { sub: { engines: ['script'], max_parallel: v } }, tasks: [task()] }),
  },
  '#/properties/budget_usd': { at: ['budget_usd'], manifest: (v) => ({ budget_usd: v, tasks: [task()] }) },
  '#/properties/budget_tokens': { at: ['budget_tokens'], manifest: (v) => ({ budget_tokens: v, tasks: [task()] }) },
  '#/properties/route/properties/explore': { at: ['route', 'explore'], manifest: (v) => ({ route: { from: ['script'], explore: v }, tasks: [task()] }) },
  '#/properties/route/properties/min_tasks': { at: ['route', 'min_tasks'], manifest: (v) => ({ route: { from: ['script'], min_tasks: v }, tasks: [task()] }) },
  '#/properties/memory_mb': { at: ['memory_mb'], manifest: (v) => ({ memory_mb: v, tasks: [task()] }) },
  '#/properties/log_max_mb': { at: ['log_max_mb'], manifest: (v) => ({ log_max_mb: v, tasks: [task()] }) },
  '#/definitions/task/properties/memory_mb': { at: ['tasks', 0, 'memory_mb'], manifest: (v) => ({ tasks: [task({ memory_mb: v })] }) },
  '#/definitions/task/properties/log_max_mb': { at: ['tasks', 0, 'log_max_mb'], manifest: (v) => ({ tasks: [task({ log_max_mb: v })] }) },
  '#/definitions/task/properties/timeout_s': { at: ['tasks', 0, 'timeout_s'], manifest: (v) => ({ tasks: [task({ timeout_s: v })] }) },
  '#/definitions/task/properties/check_timeout_s': { at: ['tasks', 0, 'check_timeout_s'], manifest: (v) => ({ tasks: [task({ check_timeout_s: v })] }) },
  '#/properties/suite_timeout_s': { at: ['suite_timeout_s'], manifest: (v) => ({ suite: 'npm test', suite_timeout_s: v, tasks: [task()] }) },
  '#/definitions/task/properties/suite_timeout_s': {
    at: ['tasks', 0, 'suite_timeout_s'],
    manifest: (v) => ({ tasks: [task({ suite: 'npm test', suite_timeout_s: v })] }),
  },
  '#/definitions/task/properties/watchdog_s': { at: ['tasks', 0, 'watchdog_s'], manifest: (v) => ({ tasks: [task({ watchdog_s: v })] }) },
  '#/definitions/task/properties/budget_usd': { at: ['tasks', 0, 'budget_usd'], manifest: (v) => ({ tasks: [task({ budget_usd: v })] }) },
  '#/definitions/task/properties/max_attempt_usd': { at: ['tasks', 0, 'max_attempt_usd'], manifest: (v) => ({ tasks: [task({ max_attempt_usd: v })] }) },
  '#/definitions/task/properties/budget_tokens': { at: ['tasks', 0, 'budget_tokens'], manifest: (v) => ({ tasks: [task({ budget_tokens: v })] }) },
  '#/definitions/task/properties/max_attempt_tokens': {
    at: ['tasks', 0, 'max_attempt_tokens'],
    manifest: (v) => ({ tasks: [task({ max_attempt_tokens: v })] }),
  },
  '#/definitions/task/properties/max_attempts': { at: ['tasks', 0, 'max_attempts'], manifest: (v) => ({ tasks: [task({ max_attempts: v })] }) },
  '#/definitions/task/properties/repeat': { at: ['tasks', 0, 'repeat'], manifest: (v) => ({ tasks: [task({ repeat: v })] }) },
  '#/definitions/task/properties/stop_after': {
    at: ['tasks', 0, 'stop_after'],
    manifest: (v) => ({ tasks: [task({ repeat: 32, select: 'all', stop_after: v })] }),
  },
  '#/definitions/task/properties/distinguish/properties/max_inputs': {
    at: ['tasks', 0, 'distinguish', 'max_inputs'],
    manifest: (v) => ({ tasks: [task({ repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'true', max_inputs: v } })] }),
  },
  '#/definitions/task/properties/distinguish/properties/timeout_s': {
    at: ['tasks', 0, 'distinguish', 'timeout_s'],
    manifest: (v) => ({ tasks: [task({ repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'true', timeout_s: v } })] }),
  },
  '#/definitions/task/properties/validate/properties/workers': {
    at: ['tasks', 0, 'validate', 'workers'],
    manifest: (v) => ({ tasks: [task({ validate: { workers: v, check: 'test -s validation.md' } })] }),
  },
  '#/definitions/task/properties/critique/properties/rounds': {
    at: ['tasks', 0, 'critique', 'rounds'],
    manifest: (v) => ({ tasks: [task({ critique: { critics: ['claude'], rounds: v } })] }),
  },
  '#/definitions/task/properties/critique/properties/time_limit_s': {
    at: ['tasks', 0, 'critique', 'time_limit_s'],
    manifest: (v) => ({ tasks: [task({ critique: { critics: ['claude'], time_limit_s: v } })] }),
  },
  '#/definitions/task/properties/generate/properties/max_tasks': {
    at: ['tasks', 0, 'generate', 'max_tasks'],
    manifest: (v) => ({ tasks: [task({ generate: { file: 'tasks.json', max_tasks: v } })] }),
  },
};

/** `tasks[0].timeout_s` for ['tasks', 0, 'timeout_s'], as the loader names a path. */
const pathText = (at: (string | number)[]) => at.map((s, i) => (typeof s === 'number' ? `[${s}]` : i ? `.${s}` : s)).join('');

/** The loader's errors at `at` for the manifest holding `v` there, and where the value is in the text (1-based). */
function errorsAt(field: (typeof FIELDS)[string], v: number) {
  const text = JSON.stringify(field.manifest(v), null, 2);
  const node = findNodeAtLocation(parseTree(text)!, field.at)!;
  const where = new LineIndex(text).position(node.offset);
  const errors = parseManifest(text, FILE, { engines }).problems.filter((p) => p.severity === 'error' && p.path === pathText(field.at));
  return { errors, where };
}

describe('numeric ranges at load', () => {
  const found = numericFields(manifestSchema);

  it('every numeric field of the manifest schema has a row in this table (the table drives the tests below)', () => {
    assert.deepEqual([...found.keys()].sort(), Object.keys(FIELDS).sort());
  });

  for (const [at, field] of Object.entries(FIELDS)) {
    const name = pathText(field.at);
    it(`${name}: has a minimum and a maximum; out of range is an error at the value's line:column, in range is not`, () => {
      const s = found.get(at);
      assert.ok(s, `${at} is not a numeric field of the schema`);
      assert.equal(typeof s.maximum, 'number', `${at} has no maximum`);
      const min = s.minimum ?? s.exclusiveMinimum;
      assert.equal(typeof min, 'number', `${at} has no minimum`);
      const max = s.maximum as number;
      // Above the maximum: a positioned error naming the field.
      const over = errorsAt(field, s.type === 'integer' ? max + 1 : max * 1.5);
      assert.equal(over.errors.length, 1, `${name} = ${max} + more: ${JSON.stringify(over.errors)}`);
      assert.match(over.errors[0]?.message ?? '', new RegExp(`^must be <= ${max}, got `));
      assert.deepEqual(over.errors[0]?.range?.start, over.where);
      // Below the minimum.
      // (A minimum of 0, route.explore's, has no half below it: 0.5 under it then.)
      const under = errorsAt(field, s.minimum !== undefined ? s.minimum - (s.type === 'integer' ? 1 : s.minimum / 2 || 0.5) : (s.exclusiveMinimum as number));
      assert.equal(under.errors.length, 1, `${name} below its minimum: ${JSON.stringify(under.errors)}`);
      assert.deepEqual(under.errors[0]?.range?.start, under.where);
      // The bounds themselves load.
      assert.deepEqual(errorsAt(field, max).errors, []);
      if (s.minimum !== undefined) assert.deepEqual(errorsAt(field, s.minimum).errors, []);
    });
  }

  it("counts are integers; durations in seconds stop at Node's timer limit and never round to 0 ms", () => {
    for (const [at, s] of found) {
      const field = at.split('/').pop() as string;
      if (field.endsWith('_s')) {
        assert.equal(s.type, 'number', `${at}: a duration may be fractional`);
        assert.equal(s.maximum, MAX_TIMER_S, `${at}: at most ${MAX_TIMER_S} s (2^31−1 ms)`);
        assert.ok((s.minimum as number) * 1000 >= 1, `${at}: its minimum must be at least 1 ms`);
      } else if (field === 'explore') {
        // route.explore is a share of decisions, not a count.
        assert.equal(s.type, 'number', `${at}: a share may be fractional`);
        assert.deepEqual([s.minimum, s.maximum], [0, 1], `${at}: a share is from 0 to 1`);
      } else if (!field.endsWith('_usd')) {
        assert.equal(s.type, 'integer', `${at}: a count is an integer`);
        const fractional = errorsAt(FIELDS[at]!, (s.maximum as number) - 0.5).errors;
        assert.match(fractional[0]?.message ?? '', /must be integer/, `${at}: a fractional count is refused`);
      }
    }
    assert.equal(MAX_TIMER_S * 1000 <= MAX_TIMER_MS, true);
    assert.equal(manifestSchema.properties.max_parallel.maximum, MAX_PARALLEL);
  });

  it('timeout_s and check_timeout_s of 2,200,000 s: a load error naming file:line:column and the field (it fired after 1 ms)', () => {
    const dir = tempDir();
    const file = path.join(dir, 'big.swarm.json');
    fs.writeFileSync(
      file,
      '{\n  "tasks": [\n    { "key": "t", "engine": "script", "spec": "sleep 1", "check": "test -s out.txt",\n      "timeout_s": 2200000, "check_timeout_s": 2200000 }\n  ]\n}\n',
    );
    let thrown: unknown;
    try {
      loadManifest(file, { engines });
    } catch (e) {
      thrown = e;
    }
    assert.ok(thrown instanceof ManifestError, 'the manifest must not load');
    const lines = thrown.problems.map(formatProblem);
    assert.deepEqual(
      lines.map((l) => l.replace(/ \(seconds: .*\)$/, '')),
      [
        `${file}:4:20: error: tasks[0].timeout_s: must be <= 2147483, got 2200000`,
        `${file}:4:48: error: tasks[0].check_timeout_s: must be <= 2147483, got 2200000`,
      ],
    );
    assert.match(lines[0] ?? '', /Node's timers hold at most 2\^31−1 ms/);
  });

  it('the largest time limit loads as a delay a timer keeps', () => {
    const text = JSON.stringify({ tasks: [task({ timeout_s: MAX_TIMER_S, check_timeout_s: MAX_TIMER_S, watchdog_s: MAX_TIMER_S })] });
    const t = parseManifest(text, FILE, { engines }).manifest?.tasks[0];
    assert.ok(t);
    for (const ms of [t.timeoutMs, t.checkTimeoutMs, t.watchdogMs as number]) assert.ok(ms >= 1 && ms <= MAX_TIMER_MS, String(ms));
  });
});

describe('numeric ranges of the user config', () => {
  it('max_parallel out of 1…256 (or fractional) is an error naming file:line:column and the field', () => {
    const dir = tempDir();
    for (const bad of [0, 257, 2.5, 1e9]) {
      const file = path.join(dir, `c${bad}.json`);
      fs.writeFileSync(file, `{\n  "identity": "me",\n  "max_parallel": ${bad}\n}\n`);
      assert.throws(
        () => loadConfig(file),
        (e: Error) => e.message === `${file}:3:19: max_parallel: must be an integer from 1 to 256 (as the manifest's max_parallel), got ${bad}`,
      );
    }
    const ok = path.join(dir, 'ok.json');
    fs.writeFileSync(ok, '{ "max_parallel": 256 }');
    assert.equal(loadConfig(ok).config.max_parallel, 256);
  });
});

describe("timers with a user's delay (fs/timer.ts)", function () {
  this.timeout(20000);

  it('timerDelay keeps a delay within 0…2^31−1 ms and refuses NaN', () => {
    assert.equal(timerDelay(1500), 1500);
    assert.equal(timerDelay(2_200_000_000), MAX_TIMER_MS);
    assert.equal(timerDelay(Infinity), MAX_TIMER_MS);
    assert.equal(timerDelay(-5), 0);
    assert.throws(() => timerDelay(Number.NaN), RangeError);
  });

  it('a process under a time limit past the timer limit is not stopped at once (it was TIMEOUT after 1 ms)', async () => {
    const dir = tempDir();
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', 'sleep 0.3; echo done'],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 2_200_000_000,
    });
    assert.equal(receipt.timedOut, false);
    assert.equal(receipt.exitCode, 0);
  });

  it('a job queued for longer than the timer limit does not start at once', async () => {
    const ran: number[] = [];
    const dropped: number[] = [];
    const s = new Scheduler<number>(
      1,
      async (n) => void ran.push(n),
      (n) => dropped.push(n),
    );
    s.push(1, 30 * 24 * 3600 * 1000);
    await sleep(100);
    assert.deepEqual(ran, []);
    s.close();
    assert.deepEqual(dropped, [1]);
  });
});
