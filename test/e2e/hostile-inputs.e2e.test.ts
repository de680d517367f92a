import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile upstream workers against the inputs copy (docs/workflows.md "Inputs"): what one plants in its sealed tree
// must neither escape the downstream task's inputs folder nor keep the downstream task from running; what cannot be
// copied is left out and listed with why.

interface StateJson {
  tasks: { key: string; status: string; reason?: string; dir: string; inputs?: { omitted: { path: string; reason: string }[] } }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

// 20 folders of 200 characters: a path git records (under 4096 bytes relative to the tree) that no longer fits once
// the inputs folder's own absolute path is in front of it.
const DEEP = '(p=$(printf "d%.0s" $(seq 1 200)); for i in $(seq 1 20); do mkdir "$p" && cd "$p"; done; echo deep > f.txt)';

describe('hostile: an upstream worker against the inputs copy', function () {
  this.timeout(240000);

  for (const mode of ['worktree', 'plain'] as const) {
    it(`${mode} mode: a path too long to copy under the inputs folder is left out with why; the reader still runs`, async function () {
      await requireSandbox(this);
      const dir = tempDir();
      const home = path.join(dir, 'home');
      const up = scriptTask('up', `echo sealed > work.txt; ${DEEP}`, 'test -s work.txt');
      const down = scriptTask('down', 'cat "$VERDICT_INPUTS/up/work.txt" > seen.txt', 'grep -qx sealed seen.txt', { after: ['up'], inputs: ['up'] });
      const file =
        mode === 'worktree'
          ? writeManifest(makeRepo(path.join(dir, 'repo')), { worktrees: true, tasks: [up, down] })
          : writeManifest(dir, { workdir: 'w', tasks: [up, down] });
      const r = await cli(['run', file, '--home', home, '--no-dashboard']);
      const state = stateOf(home);
      const downState = state.tasks.find((t) => t.key === 'down');
      assert.equal(state.tasks.find((t) => t.key === 'up')?.status, 'PASS', r.all);
      assert.equal(downState?.status, 'PASS', `${downState?.reason}\n${r.all}`);
      assert.equal(r.exitCode, 0, r.all);
      const omitted = downState?.inputs?.omitted ?? [];
      assert.ok(
        omitted.some((o) => o.path.endsWith('/f.txt') || /too long/.test(o.reason)),
        JSON.stringify(omitted),
      );
    });
  }
});
