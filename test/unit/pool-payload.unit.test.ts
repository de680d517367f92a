import assert from 'node:assert/strict';
import { BadJobError, parseJob, parseJobSpend, queueOf, type AttemptJob } from '../../extension/core/pool/payload';
import { uuidOf } from '../../extension/core/pool/dispatch';

const job: AttemptJob = {
  v: 6,
  runId: '20260101-120000-ab12',
  runName: 'r',
  identity: 'me',
  key: 't1',
  attempt: 2,
  retry: true,
  engine: 'codex',
  model: null,
  taskType: null,
  spec: 'do it',
  failure: 'it failed',
  check: 'npm test',
  expectFiles: [],
  timeoutMs: 1000,
  checkTimeoutMs: 1000,
  watchdogMs: null,
  engineArgs: [],
  verified: null,
  network: true,
  protect: null,
  setup: null,
  remote: '/srv/git/app.git',
  baseSha: 'a'.repeat(40),
  branch: 'verdict/20260101-120000-ab12/t1',
  startFrom: [{ key: 'dep', commit: 'b'.repeat(40) }],
  group: null,
  candidate: null,
  review: { engines: [{ engine: 'claude', model: null }], require: 'all' },
  guard: { secrets: true, stubs: true, deps: true, paths: true },
  allowDeps: true,
  allowPaths: null,
  inputs: {
    anonymous: true,
    entries: [
      { path: 'answers/A', commit: 'c'.repeat(40) },
      { path: 'answers/B', commit: 'd'.repeat(40) },
    ],
  },
  workflows: { phases: [{ file: 'src/a.mjs', implement: 't1--impl-1', start: 'e'.repeat(40) }] },
};

describe('pool payload: what a worker accepts from the queue', () => {
  it('takes a well-formed attempt as it is', () => {
    assert.deepEqual(parseJob(JSON.parse(JSON.stringify(job))), job);
    assert.deepEqual(parseJob({ ...job, inputs: null }).inputs, null);
    assert.deepEqual(parseJob({ ...job, workflows: {} }).workflows, {});
    assert.deepEqual(parseJob({ ...job, workflows: { critique: true } }).workflows, { critique: true });
    // Named inputs (not anonymous) keep their key names, in a folder or not.
    const named = {
      anonymous: false,
      entries: [
        { path: 'impl-1', commit: 'c'.repeat(40) },
        { path: 'answers/b_2.x', commit: 'e'.repeat(64) },
      ],
    };
    assert.deepEqual(parseJob({ ...job, inputs: named }).inputs, named);
  });

  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['a key that climbs out of the task dir', { key: '../../etc', branch: 'verdict/20260101-120000-ab12/../../etc' }, /field key/],
    ['a key with a slash', { key: 'a/b', branch: 'verdict/20260101-120000-ab12/a/b' }, /field key/],
    ['a run id that is a path', { runId: '../x' }, /field runId/],
    ['a branch other than the task branch', { branch: 'main' }, /field branch/],
    ['full access (not a field a worker takes)', { fullAccess: true }, /does not take: fullAccess/],
    ['an environment for the worker', { env: { OPENAI_API_KEY: 'x' } }, /does not take: env/],
    ['a remote read as a git option', { remote: '--upload-pack=touch /tmp/x' }, /field remote/],
    ['a base that is not a sha', { baseSha: 'HEAD' }, /field baseSha/],
    ['a start point that is not a commit', { startFrom: [{ key: 'dep', commit: 'main' }] }, /field startFrom/],
    ['a zero attempt', { attempt: 0 }, /field attempt/],
    ['another payload version', { v: 5 }, /field v/],
    ['the revision flag of an older payload', { revising: true }, /does not take: revising/],
    ['a revision part that is not true', { workflows: { critique: 'yes' } }, /field workflows\.critique: expected true/],
    ['no workflows field', { workflows: undefined }, /field workflows: expected an object/],
    ['workflows that are a list', { workflows: [] }, /field workflows: expected an object/],
    [
      'the part of a workflow the worker does not have',
      { workflows: { nosuch: 1 } },
      /field workflows\.nosuch: expected the part of a workflow this worker runs \(phases, critique\)/,
    ],
    ['a guard switch that is not a boolean', { guard: { secrets: 'no', stubs: true, deps: true, paths: true } }, /field guard/],
    ['a review with an extra field', { review: { engines: [{ engine: 'claude', model: null }], require: 'all', run: 'x' } }, /field review/],
    // Inputs: a worker copies what a payload names into a folder its sandbox shows; a hostile payload must not make it
    // read or write elsewhere, run git with an option, or tell an anonymous reader whose work is whose.
    ['no inputs field (an older payload)', { inputs: undefined }, /field inputs/],
    [
      'an input path that climbs out of the inputs folder',
      { inputs: { anonymous: false, entries: [{ path: '../../etc', commit: 'c'.repeat(40) }] } },
      /field inputs/,
    ],
    ['an input path with ..', { inputs: { anonymous: false, entries: [{ path: 'answers/..', commit: 'c'.repeat(40) }] } }, /field inputs/],
    ['an absolute input path', { inputs: { anonymous: false, entries: [{ path: '/home/me/repo', commit: 'c'.repeat(40) }] } }, /field inputs/],
    ['an input path three deep', { inputs: { anonymous: false, entries: [{ path: 'a/b/c', commit: 'c'.repeat(40) }] } }, /field inputs/],
    ['a hidden input name', { inputs: { anonymous: false, entries: [{ path: '.git', commit: 'c'.repeat(40) }] } }, /field inputs/],
    ['an input commit read as a git option', { inputs: { anonymous: false, entries: [{ path: 'a', commit: '--upload-pack=touch /tmp/x' }] } }, /field inputs/],
    ['an input commit that is a ref, not a sha', { inputs: { anonymous: false, entries: [{ path: 'a', commit: 'refs/heads/main' }] } }, /field inputs/],
    [
      'an anonymous input named by its task key',
      { inputs: { anonymous: true, entries: [{ path: 'answers/agent--c1', commit: 'c'.repeat(40) }] } },
      /anonymous names are one capital letter/,
    ],
    [
      'an input path twice',
      {
        inputs: {
          anonymous: true,
          entries: [
            { path: 'A', commit: 'c'.repeat(40) },
            { path: 'A', commit: 'd'.repeat(40) },
          ],
        },
      },
      /there twice/,
    ],
    [
      'an input entry with a source path',
      { inputs: { anonymous: false, entries: [{ path: 'a', commit: 'c'.repeat(40), dir: '/home/me/.verdict/runs' }] } },
      /field inputs/,
    ],
    ['inputs with an extra field', { inputs: { anonymous: false, entries: [], gitDir: '/home/me/repo/.git' } }, /field inputs/],
    ['inputs that are a list', { inputs: [{ path: 'a', commit: 'c'.repeat(40) }] }, /field inputs/],
    // Red before green: the worker writes what a payload's start commit holds at `file` in its red copy; a hostile
    // payload must not make it write outside that copy, run git with an option, or skip the red run unseen.
    ['the red field of an older payload', { red: [] }, /does not take: red/],
    [
      'a red file that climbs out of the task dir',
      { workflows: { phases: [{ file: '../../x', implement: 't1--impl-1', start: 'e'.repeat(40) }] } },
      /field workflows\.phases/,
    ],
    ['an absolute red file', { workflows: { phases: [{ file: '/etc/passwd', implement: 't1--impl-1', start: 'e'.repeat(40) }] } }, /field workflows\.phases/],
    [
      'a red start read as a git option',
      { workflows: { phases: [{ file: 'a', implement: 't1--impl-1', start: '--output=/tmp/x' }] } },
      /field workflows\.phases/,
    ],
    [
      'a red entry with an extra field',
      { workflows: { phases: [{ file: 'a', implement: 't1--impl-1', start: 'e'.repeat(40), dir: '/x' }] } },
      /field workflows\.phases/,
    ],
    ['an empty red list', { workflows: { phases: [] } }, /field workflows\.phases/],
  ];
  it("refuses a part named after an object's own property (__proto__, constructor), as a payload from the queue is parsed: nothing reaches the prototype", () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      const data = JSON.parse(JSON.stringify(job).replace('"workflows":{', `"workflows":{"${name}":{"polluted":true},`)) as Record<string, unknown>;
      assert.ok(Object.hasOwn(data.workflows as object, name), `the payload holds ${name} as its own field`);
      assert.throws(
        () => parseJob(data),
        (e: Error) => e instanceof BadJobError && e.message.startsWith(`payload field workflows.${name}: expected the part of a workflow this worker runs`),
      );
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    }
  });

  for (const [name, change, message] of refused) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => parseJob({ ...job, ...change }),
        (e: Error) => e instanceof BadJobError && message.test(e.message),
      );
    });
  }

  it('queue names pg-boss accepts, one per engine; job ids stable per run/task/attempt', () => {
    assert.equal(queueOf('codex'), 'verdict-attempt-codex');
    assert.equal(queueOf('my.engine'), 'verdict-attempt-my_engine');
    assert.equal(uuidOf('r/t/1'), uuidOf('r/t/1'));
    assert.notEqual(uuidOf('r/t/1'), uuidOf('r/t/2'));
    assert.match(uuidOf('r/t/1'), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("a running attempt's spend as a worker wrote it: exactly {usd, tokens}, each a whole number >= 0 or null; anything else counts nothing", () => {
    assert.deepEqual(parseJobSpend({ usd: 5100, tokens: 1050 }), { usd: 5100, tokens: 1050 });
    assert.deepEqual(parseJobSpend({ usd: null, tokens: 0 }), { usd: null, tokens: 0 });
    for (const bad of [
      null,
      7,
      'x',
      [],
      {},
      { usd: 1 },
      { usd: -1, tokens: 0 },
      { usd: 1.5, tokens: 0 },
      { usd: '1', tokens: 0 },
      { usd: 1, tokens: 2, more: 3 },
      { usd: 1e300, tokens: 0 },
    ])
      assert.equal(parseJobSpend(bad), null, JSON.stringify(bad));
  });
});
