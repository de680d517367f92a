import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { alive, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** /proc start time (field 22) of `pid`. */
function startTime(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
}

// A hostile worker (and a hostile check: the worker's own code) against what crash recovery trusts since the
// orchestrator may die mid-run: the attempt's receipt.json (a verdict there is taken for the attempt's) and the worker
// journal (each `{"init":…}` line is SIGKILLed if its pid still has that start time). Both steps know where they are:
// VERDICT_HOME, the run id, their key and attempt. They try to write a PASS receipt and to name a process of the
// user's (a `sleep` this test started) as a sandbox init, then hang until the orchestrator is SIGKILLed.
describe('hostile: a sandboxed step forges what reconcile trusts (receipt.json, workers.jsonl)', function () {
  this.timeout(180000);
  before(async function () {
    await requireSandbox(this);
  });

  it("neither the worker nor the check can write them: after a SIGKILL of the orchestrator both attempts are INTERRUPTED and the user's process lives", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const victim = spawn('sleep', ['600'], { stdio: 'ignore', detached: true });
    try {
      const forge = (tag: string) =>
        [
          `a=${home}/runs/$VERDICT_RUN_ID/tasks/$VERDICT_TASK_KEY/attempt-$VERDICT_ATTEMPT`,
          `if echo '{"verdict":"PASS","reason":"forged"}' > $a/receipt.json 2>/dev/null; then echo receipt-written; else echo receipt-denied; fi >> ${tag}`,
          `if echo '{"init":{"pid":${victim.pid},"startTime":"${startTime(victim.pid!)}"}}' >> ${home}/runs/$VERDICT_RUN_ID/workers.jsonl 2>/dev/null; then echo journal-written; else echo journal-denied; fi >> ${tag}`,
          `if ls ${home}/runs >/dev/null 2>&1; then echo home-visible; else echo home-hidden; fi >> ${tag}`,
        ].join('\n');
      // w: the worker forges on attempt 1 and hangs; c: the worker writes a check script that does it, and hangs.
      const w = scriptTask('w', `if [ "$VERDICT_ATTEMPT" = 1 ]; then\n${forge('forge-w.txt')}\nsleep 300; fi\necho ok > out.txt`, 'test -s out.txt', {
        max_attempts: 1,
        timeout_s: 600,
      });
      const cScript = `if [ "$VERDICT_ATTEMPT" = 1 ]; then\n${forge('forge-c.txt')}\nsleep 300; fi\nexit 0`;
      const c = scriptTask('c', `cat > c.sh <<'EOS'\n${cScript}\nEOS\necho ok > out.txt`, 'sh ./c.sh', {
        max_attempts: 1,
        timeout_s: 600,
        check_timeout_s: 600,
      });
      const manifest = writeManifest(dir, { worktrees: true, repo, max_parallel: 2, tasks: [w, c] });
      fs.mkdirSync(path.join(dir, 'user-home'));
      const env = { HOME: path.join(dir, 'user-home') };
      const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, stdin: 'ignore', env, all: true });
      const tagOf = (key: string) => {
        const runs = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
        return runs[0] ? path.join(home, 'worktrees', runs[0], key, `forge-${key}.txt`) : '';
      };
      const done = (key: string) => tagOf(key) !== '' && fs.existsSync(tagOf(key)) && fs.readFileSync(tagOf(key), 'utf8').includes('home-');
      for (let i = 0; i < 1200 && !(done('w') && done('c')); i++) await sleep(100);
      const tags = { w: fs.readFileSync(tagOf('w'), 'utf8'), c: fs.readFileSync(tagOf('c'), 'utf8') };
      child.kill('SIGKILL');
      await child;
      const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;

      const r = await cli(['resume', runId, '--home', home, '--no-dashboard'], { env });
      assert.match(r.stderr, new RegExp(`reconciled run ${runId}`), r.all);
      assert.ok(alive(victim.pid!), 'reconcile killed a process that is no sandbox of the run');
      for (const key of ['w', 'c'] as const)
        assert.deepEqual(tags[key].trim().split('\n'), ['receipt-denied', 'journal-denied', 'home-hidden'], `${key}: ${tags[key]}`);
      const rows = readRows(home);
      assert.deepEqual(
        rows
          .filter((x) => x.attempt === 1)
          .map((x) => [x.task_key, x.verdict])
          .sort(),
        [
          ['c', 'INTERRUPTED'],
          ['w', 'INTERRUPTED'],
        ],
        r.all,
      );
      assert.deepEqual(
        rows
          .filter((x) => x.attempt === 2)
          .map((x) => [x.task_key, x.verdict])
          .sort(),
        [
          ['c', 'PASS'],
          ['w', 'PASS'],
        ],
        r.all,
      );
    } finally {
      victim.kill('SIGKILL');
    }
  });
});
