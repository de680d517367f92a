import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { appendControl, controlFile, ControlReader, isCommand, parseControlLine } from '../../extension/core/live/control';
import { Scheduler } from '../../extension/core/run/scheduler';
import { tempDir } from '../helpers/fixtures';

describe('control channel: runs/<id>/control.jsonl', () => {
  it('appends one line per command under the lock; the reader returns each once, by byte offset', async () => {
    const dir = tempDir();
    const reader = new ControlReader(controlFile(dir));
    assert.deepEqual(reader.read(), [], 'a missing file reads as empty');
    const sent = await Promise.all(['pause', 'resume', 'drain'].map((verb) => appendControl(dir, { verb: verb as 'pause', by: 'alice', host: 'h' })));
    const read = reader.read();
    assert.deepEqual(read.map((c) => c.id).sort(), sent.map((c) => c.id).sort());
    assert.ok(read.every(isCommand));
    assert.deepEqual(reader.read(), [], 'nothing new: nothing returned again');
    const stop = await appendControl(dir, { verb: 'stop', task: 'a', by: 'bob', host: 'h2' });
    assert.deepEqual(reader.read(), [stop]);
  });

  it('a partial last line (a sender mid-append) is left for the next read, then read whole', () => {
    const dir = tempDir();
    const file = controlFile(dir);
    const line = JSON.stringify({ id: 'x1', verb: 'stop', task: 'a', by: 'carol', host: 'h', pid: 1, at: 5 });
    fs.writeFileSync(file, JSON.stringify({ id: 'x0', verb: 'pause', by: 'carol', host: 'h', pid: 1, at: 4 }) + '\n' + line.slice(0, 20));
    const reader = new ControlReader(file);
    assert.deepEqual(
      reader.read().map((c) => c.id),
      ['x0'],
    );
    assert.deepEqual(reader.read(), []);
    fs.appendFileSync(file, line.slice(20));
    assert.deepEqual(reader.read(), [], 'still no newline');
    fs.appendFileSync(file, '\n');
    assert.deepEqual(reader.read(), [{ id: 'x1', verb: 'stop', task: 'a', by: 'carol', host: 'h', pid: 1, at: 5 }]);
  });

  it('refuses, with a reason, an unknown verb, a line that is not JSON, no id, a task verb without its task', () => {
    const unknown = parseControlLine(JSON.stringify({ id: 'u', verb: 'explode', by: 'dan', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(unknown));
    assert.equal(unknown.id, 'u');
    assert.match(unknown.reason, /^unknown verb "explode" \(known: stop, cancel, pause, resume, drain, rerun, unwait, record\)/);
    // record (sent by the merge queue and discard) carries what it records, checked field by field.
    const sha = 'a'.repeat(40);
    const record = (landed: unknown) => parseControlLine(JSON.stringify({ id: 'x', verb: 'record', task: 't', landed, by: 'v', host: 'h', at: 1 }), 0);
    const ok = record({ merged: { commit: sha, into: 'main', at: 2 } });
    assert.ok(isCommand(ok) && ok.landed && 'merged' in ok.landed && ok.landed.merged?.into === 'main');
    assert.ok(isCommand(record({ discarded: { commit: null, at: 2 } })));
    // merged.paths (what the merge changed, guarded against a later merge of the run) is optional, a list of paths.
    const withPaths = record({ merged: { commit: sha, into: 'main', at: 2, paths: ['a.txt', 'd/b.txt'] } });
    assert.ok(isCommand(withPaths) && withPaths.landed && 'merged' in withPaths.landed);
    assert.deepEqual(withPaths.landed.merged?.paths, ['a.txt', 'd/b.txt']);
    for (const bad of [
      undefined,
      { merged: { commit: 'HEAD', into: 'main', at: 2 } },
      { merged: { commit: sha, into: '', at: 2 } },
      { merged: { commit: sha, into: 'main', at: 2, paths: 'a.txt' } },
      { merged: { commit: sha, into: 'main', at: 2, paths: [1] } },
      { discarded: { commit: sha } },
      { merged: { commit: sha, into: 'main', at: 2 }, discarded: { commit: null, at: 2 } },
    ]) {
      const r = record(bad);
      assert.ok(!isCommand(r) && /^record needs landed/.test(r.reason), JSON.stringify(bad));
    }
    const stray = parseControlLine(JSON.stringify({ id: 's', verb: 'pause', landed: { discarded: { commit: null, at: 1 } }, by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(stray) && stray.reason === 'pause takes no landed');
    const junk = parseControlLine('{"id": "j", verb', 120);
    assert.ok(!isCommand(junk));
    assert.equal(junk.id, 'line@120');
    assert.match(junk.reason, /^not JSON/);
    const noId = parseControlLine(JSON.stringify({ verb: 'pause' }), 7);
    assert.ok(!isCommand(noId) && noId.reason === 'no id' && noId.id === 'line@7');
    const rerun = parseControlLine(JSON.stringify({ id: 'r', verb: 'rerun', by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(rerun) && /rerun needs a task/.test(rerun.reason));
    const pause = parseControlLine(JSON.stringify({ id: 'p', verb: 'pause', task: 'a', by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(pause) && /takes no task/.test(pause.reason));
    // unwait names an engine, and only unwait does.
    const unwait = parseControlLine(JSON.stringify({ id: 'w', verb: 'unwait', engine: 'codex', by: 'e', host: 'h', pid: 1, at: 1 }), 0);
    assert.deepEqual(unwait, { id: 'w', verb: 'unwait', engine: 'codex', by: 'e', host: 'h', pid: 1, at: 1 });
    const noEngine = parseControlLine(JSON.stringify({ id: 'w2', verb: 'unwait', by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(noEngine) && /unwait needs an engine/.test(noEngine.reason));
    const unwaitTask = parseControlLine(JSON.stringify({ id: 'w3', verb: 'unwait', engine: 'codex', task: 'a', by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(unwaitTask) && /acts on an engine; it takes no task/.test(unwaitTask.reason));
    const drainEngine = parseControlLine(JSON.stringify({ id: 'd', verb: 'drain', engine: 'codex', by: 'e', host: 'h', at: 1 }), 0);
    assert.ok(!isCommand(drainEngine) && /drain takes no engine/.test(drainEngine.reason));
  });

  it('skips blank lines and keeps reading after a bad one', () => {
    const dir = tempDir();
    const file = path.join(dir, 'control.jsonl');
    fs.writeFileSync(file, '\n not json\n' + JSON.stringify({ id: 'ok', verb: 'cancel', by: 'f', host: 'h', pid: 2, at: 3 }) + '\n');
    const read = new ControlReader(file).read();
    assert.equal(read.length, 2);
    assert.ok(!isCommand(read[0]!));
    assert.ok(isCommand(read[1]!) && read[1].verb === 'cancel');
  });
});

describe('Scheduler: pause, resume, drop', () => {
  it('starts nothing while paused (running jobs finish), starts again on resume; a dropped job goes to onDropped', async () => {
    const started: string[] = [];
    const dropped: string[] = [];
    const gates = new Map<string, () => void>();
    const s = new Scheduler<string>(
      1,
      (job) =>
        new Promise<void>((resolve) => {
          started.push(job);
          gates.set(job, resolve);
        }),
      (job) => dropped.push(job),
    );
    for (const j of ['a', 'b', 'c']) s.push(j);
    assert.deepEqual(started, ['a']);
    s.pause();
    gates.get('a')!();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(started, ['a'], 'paused: b does not start when a ends');
    assert.equal(s.drop('c'), true);
    assert.equal(s.drop('c'), false);
    assert.deepEqual(dropped, ['c']);
    s.resume();
    assert.deepEqual(started, ['a', 'b']);
    gates.get('b')!();
    await s.idle();
  });
});
