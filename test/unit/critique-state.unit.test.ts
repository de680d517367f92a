import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { newLoop, type CritiqueLoop } from '../../extension/core/run/workflows/critique/loop';
import { critiqueLoopFile, loadLoop, saveLoop } from '../../extension/core/run/workflows/critique/state';
import { tempDir } from '../helpers/fixtures';

describe('critique: the loop kept across orchestrators (run/workflows/critique/state.ts)', () => {
  const loop = (): CritiqueLoop => ({
    ...newLoop(),
    startedAt: 1_700_000_000_000,
    rounds: [
      {
        round: 1,
        attempt: 1,
        sealed: 'abc',
        criticisms: [
          { file: 'a.ts', line: 2, claim: 'wrong', critic: 1, verified: true, evidence: 'a.ts:2: x' },
          { command: 'false', claim: 'c', critic: 1, verified: false, evidence: 'can never exit 0' },
        ],
        criticErrors: ['critic 2 gave no valid answer: x'],
        decision: 'revision 1 asked',
      },
    ],
    revisions: 1,
    lastSealed: 'abc',
    open: [{ file: 'a.ts', line: 2, claim: 'wrong', critic: 1, verified: true, evidence: 'a.ts:2: x' }],
    pending: true,
    dropped: 1,
    base: 'def',
  });

  it('saves the whole loop and reads it back as it was; no file is no loop', () => {
    const dir = path.join(tempDir(), 'runs', 'r1', 'tasks', 'slug');
    const file = critiqueLoopFile(dir);
    assert.equal(loadLoop(file), null);
    saveLoop(file, loop());
    assert.deepEqual(loadLoop(file), loop());
    // Written whole: nothing but the file is left in the folder (no temp file).
    assert.deepEqual(fs.readdirSync(dir), ['critique-loop.json']);
  });

  it('refuses a file it did not write, naming the file and the field', () => {
    const file = critiqueLoopFile(tempDir());
    const refuses = (content: string, why: RegExp) => {
      fs.writeFileSync(file, content);
      assert.throws(
        () => loadLoop(file),
        (e: Error) => e.message.startsWith(`${file}: `) && why.test(e.message),
        content,
      );
    };
    refuses('{"version": 1', /not JSON/);
    refuses('[]', /\(file\) must be an object/);
    refuses(JSON.stringify({ ...loop(), version: 2 }), /version must be 1/);
    refuses(JSON.stringify({ ...loop(), version: 1, revisions: -1 }), /revisions must be a whole number/);
    refuses(JSON.stringify({ ...loop(), version: 1, pending: 'yes' }), /pending must be true or false/);
    refuses(
      JSON.stringify({ ...loop(), version: 1, open: [{ file: 'a', line: 1.5, claim: 'c', critic: 1, verified: true, evidence: '' }] }),
      /open\[0\]\.line must be a whole number/,
    );
    refuses(JSON.stringify({ ...loop(), version: 1, rounds: [{ ...loop().rounds[0], decision: 3 }] }), /rounds\[0\]\.decision must be a string/);
  });
});
