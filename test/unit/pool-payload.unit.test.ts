import assert from 'node:assert/strict';
import { BadJobError, parseJob, queueOf, type AttemptJob } from '../../extension/core/pool/payload';
import { uuidOf } from '../../extension/core/pool/dispatch';

const job: AttemptJob = {
  v: 1, runId: '20260101-120000-ab12', runName: 'r', identity: 'me', key: 't1', attempt: 2, retry: true, engine: 'codex', model: null, taskType: null,
  spec: 'do it', failure: 'it failed', check: 'npm test', expectFiles: [], timeoutMs: 1000, checkTimeoutMs: 1000, watchdogMs: null, engineArgs: [],
  verified: null, network: true, protect: null, setup: null, remote: '/srv/git/app.git', baseSha: 'a'.repeat(40), branch: 'verdict/20260101-120000-ab12/t1',
  startFrom: [{ key: 'dep', commit: 'b'.repeat(40) }], group: null, candidate: null,
  review: { engines: [{ engine: 'claude', model: null }], require: 'all' }, guard: { secrets: true, stubs: true, deps: true, paths: true }, allowDeps: true, allowPaths: null,
};

describe('pool payload: what a worker accepts from the queue', () => {
  it('takes a well-formed attempt as it is', () => {
    assert.deepEqual(parseJob(JSON.parse(JSON.stringify(job))), job);
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
    ['another payload version', { v: 2 }, /field v/],
    ['a guard switch that is not a boolean', { guard: { secrets: 'no', stubs: true, deps: true, paths: true } }, /field guard/],
    ['a review with an extra field', { review: { engines: [{ engine: 'claude', model: null }], require: 'all', run: 'x' } }, /field review/],
  ];
  for (const [name, change, message] of refused) {
    it(`refuses ${name}`, () => {
      assert.throws(() => parseJob({ ...job, ...change }), (e: Error) => e instanceof BadJobError && message.test(e.message));
    });
  }

  it('queue names pg-boss accepts, one per engine; job ids stable per run/task/attempt', () => {
    assert.equal(queueOf('codex'), 'verdict-attempt-codex');
    assert.equal(queueOf('my.engine'), 'verdict-attempt-my_engine');
    assert.equal(uuidOf('r/t/1'), uuidOf('r/t/1'));
    assert.notEqual(uuidOf('r/t/1'), uuidOf('r/t/2'));
    assert.match(uuidOf('r/t/1'), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
