import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { vanishedCover, type SupervisedResult } from '../../extension/core/process/supervisor';
import { tempDir } from '../helpers/fixtures';

/** A step's result as vanishedCover reads it: bubblewrap's exit and the output's tail. */
const r = (tail: string, startedAt = Date.now()) => ({ receipt: { exitCode: 1, startedAt }, tail }) as unknown as SupervisedResult;

describe('a host socket gone while bubblewrap covers it (unit)', () => {
  it("counts only a covered path that is gone or made again since the step started, in bubblewrap's own first line", async () => {
    const dir = tempDir();
    const gone = path.join(dir, 'gone.sock');
    const stays = path.join(dir, 'stays.sock');
    const server = net.createServer().listen(stays);
    await new Promise((r) => server.once('listening', r));
    try {
      const args = ['--ro-bind', '/', '/', '--ro-bind', '/dev/null', gone, '--ro-bind', '/dev/null', stays];
      assert.equal(vanishedCover(r(`bwrap: Can't create file at ${gone}: Read-only file system\n`), args), true);
      assert.equal(
        vanishedCover(
          r(`bwrap: Can't bind mount /oldroot/dev/null on /newroot${gone}: Unable to mount source on destination: No such file or directory\n`),
          args,
        ),
        true,
      );
      assert.equal(
        vanishedCover(r(`bwrap: Can't create file at ${stays}: Read-only file system\n`, Date.now() + 60_000), args),
        false,
        'a socket that stayed, older than the step',
      );
      assert.equal(
        vanishedCover(r(`bwrap: Can't create file at ${stays}: Read-only file system\n`, fs.statSync(stays).ctimeMs), args),
        true,
        'made again since the step started',
      );
      assert.equal(vanishedCover(r(`bwrap: Can't create file at ${path.join(dir, 'other.sock')}: Read-only file system\n`), args), false, 'not a covered path');
      assert.equal(
        vanishedCover(r(`test output\nbwrap: Can't create file at ${gone}: Read-only file system\n`), args),
        false,
        "printed by the step, not bubblewrap's first line",
      );
    } finally {
      server.close();
    }
  });
});
