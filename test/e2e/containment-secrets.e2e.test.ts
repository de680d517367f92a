import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { postgresBinDir, TestPostgres } from '../helpers/postgres';
import { requireSandbox } from '../helpers/sandbox-env';
import { uncoveredDir } from '../helpers/uncovered';

// The user's secrets are out of every step's reach (core/process/secrets.ts). The world is read-only but was
// visible: a worker read Verdict's own config, which holds the Postgres URL with its password, connected, and rewrote
// its FAIL row to PASS in the shared scoreboard. Every secret place of the home is planted here with a marker; a
// worker, its check and a reviewer each print what they can read of them and of their environment.

/** Every place the sandbox hides by default (relative to the home), with the marker planted in it. */
const PLANTED: Record<string, string> = {
  '.ssh/id_ed25519': 'SECRET-ssh',
  '.gnupg/private-keys-v1.d/key': 'SECRET-gnupg',
  '.aws/credentials': 'SECRET-aws',
  '.azure/accessTokens.json': 'SECRET-azure',
  '.config/gcloud/application_default_credentials.json': 'SECRET-gcloud',
  '.kube/config': 'SECRET-kube',
  '.docker/config.json': 'SECRET-docker',
  '.netrc': 'SECRET-netrc',
  '.pgpass': 'SECRET-pgpass',
  '.npmrc': 'SECRET-npmrc',
  '.git-credentials': 'SECRET-git-credentials',
  '.config/gh/hosts.yml': 'SECRET-gh',
  '.config/verdict/config.json': '{"postgres_url": "postgres://verdict:SECRET-verdict-config@db/x"}',
  '.ringer/token': 'SECRET-ringer',
  '.config/ringer/config.toml': 'identity_default = "SECRET-ringer-config"\n',
  // The config's `hide` adds this one; the manifest's adds a file outside the home (below).
  '.config/mycloud/token': 'SECRET-config-hide',
  // Exposed by the config: a whole default-hidden file, and one file inside a hidden folder.
  '.pypirc': 'EXPOSED-pypirc',
  '.ssh/known_hosts': 'EXPOSED-known-hosts',
  // Not a secret: read as before (the probe works).
  '.bashrc': 'PLAIN-bashrc',
};

/** Prints every marker a step can read (files under the home and the extra places given, its environment). */
const PROBE = (home: string, extra: string[]) =>
  `grep -rhoE '(SECRET|EXPOSED|PLAIN)-[a-z-]+' ${home} ${extra.join(' ')} 2>/dev/null | sort -u; env | grep -oE '(SECRET|OWN)-[a-z-]+' | sort -u; true`;

describe("containment: the user's secrets are hidden from every step (worker, check, reviewer)", function () {
  this.timeout(300_000);

  before(async function () {
    await requireSandbox(this);
  });

  it("every secret place is empty, a config's and a manifest's hide too; expose shows; credential variables dropped but the engine's own", async () => {
    const dir = tempDir();
    const home = uncoveredDir('user-home-');
    for (const [rel, content] of Object.entries(PLANTED)) {
      fs.mkdirSync(path.dirname(path.join(home, rel)), { recursive: true });
      fs.writeFileSync(path.join(home, rel), content);
    }
    const manifestHidden = path.join(dir, 'company-secret.txt');
    fs.writeFileSync(manifestHidden, 'SECRET-manifest-hide');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // The reviewer's scratch dir is its own and gone after it: it reports through its log, which the test reads.
    fs.writeFileSync(
      path.join(bin, 'review-probe'),
      `#!/bin/bash\necho '--- probe'\n${PROBE(home, [manifestHidden, dir])}\necho '--- end'\necho '{"verdict": "approve", "concerns": []}'\n`,
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        engines: {
          probe: { binary: 'review-probe', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'probe-1', credential_env: ['PROBE_API_KEY'] },
        },
        postgres_url: 'postgres://verdict:SECRET-config-in-force@127.0.0.1:9/x',
        hide: ['~/.config/mycloud'],
        expose: ['~/.pypirc', '~/.ssh/known_hosts'],
      }),
    );
    const file = writeManifest(dir, {
      workdir: 'w',
      hide: [manifestHidden],
      tasks: [
        scriptTask(
          'probe',
          `{ ${PROBE(home, [manifestHidden, dir])}; } > worker-probe.txt; echo ok > out.txt`,
          // Printed: what a check writes in a plain task dir is discarded once it passed.
          `{ ${PROBE(home, [manifestHidden, dir])}; } > check-probe.txt; test -s out.txt && cat check-probe.txt`,
          { max_attempts: 1, review: { engines: ['probe'] } },
        ),
      ],
    });
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--config', config, '--no-dashboard'], {
      env: {
        HOME: home,
        PATH: `${bin}:${process.env.PATH}`,
        GITHUB_TOKEN: 'SECRET-env-token',
        AWS_SECRET_ACCESS_KEY: 'SECRET-env-aws',
        DATABASE_URL: 'postgres://u:SECRET-env-database-url@db/x',
        PGPASSWORD: 'SECRET-env-pgpassword',
        MY_SERVICE_API_KEY: 'SECRET-env-api-key',
        CACHE_URL: 'redis://:SECRET-env-url-password@127.0.0.1:6379',
        PROBE_API_KEY: 'OWN-probe-key',
      },
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(path.join(dir, 'home')).map((row) => `${row.step}:${row.verdict}`),
      ['work:PASS', 'review:PASS'],
    );
    const taskDir = path.join(dir, 'w', 'probe');
    const seen = {
      worker: fs.readFileSync(path.join(taskDir, 'worker-probe.txt'), 'utf8').trim().split('\n'),
      check: fs
        .readFileSync(String(readRows(path.join(dir, 'home'))[0]?.check_log), 'utf8')
        .trim()
        .split('\n'),
      reviewer: reviewerProbe(String(readRows(path.join(dir, 'home'))[1]?.worker_log)),
    };
    // What each step could read: only the plain file and the exposed ones; the reviewer also its engine's own key.
    assert.deepEqual(seen.worker, ['EXPOSED-known-hosts', 'EXPOSED-pypirc', 'PLAIN-bashrc'], 'worker');
    assert.deepEqual(seen.check, ['EXPOSED-known-hosts', 'EXPOSED-pypirc', 'PLAIN-bashrc'], 'check');
    assert.deepEqual(seen.reviewer, ['EXPOSED-known-hosts', 'EXPOSED-pypirc', 'PLAIN-bashrc', 'OWN-probe-key'], 'reviewer');
  });

  it("Verdict's config holds the scoreboard's password: a worker cannot read it (nor ~/.pgpass, PGPASSWORD) and its FAIL row stays FAIL", async function () {
    const bin = postgresBinDir();
    if (!bin) {
      console.log('      skipped: no PostgreSQL binaries (/usr/lib/postgresql/*/bin)');
      this.skip();
    }
    const password = `pw-${process.pid}-secret`;
    const server = await TestPostgres.create(bin as string, { password });
    try {
      const dir = tempDir();
      const home = uncoveredDir('user-home-');
      const configDir = path.join(home, '.config', 'verdict');
      fs.mkdirSync(configDir, { recursive: true });
      // The default config file: the run mirrors its rows there; the same URL, password included, is all a worker needs.
      fs.writeFileSync(path.join(configDir, 'config.json'), JSON.stringify({ postgres_url: server.url }));
      fs.writeFileSync(path.join(home, '.pgpass'), `127.0.0.1:${server.port}:*:postgres:${password}\n`, { mode: 0o600 });
      // Attempt 1 does nothing (FAIL, mirrored); attempt 2 looks for the password everywhere and, with it, rewrites
      // attempt 1's row to PASS (waiting for it to reach the table).
      const steal = [
        'if [ "$VERDICT_ATTEMPT" = 2 ]; then',
        `  url=$(grep -oE 'postgres://[^"]+' "$HOME/.config/verdict/config.json" 2>/dev/null | head -1)`,
        `  [ -z "$url" ] && pw=$(cut -d: -f5 "$HOME/.pgpass" 2>/dev/null) && [ -n "$pw" ] && url="postgres://postgres:$pw@127.0.0.1:${server.port}/postgres"`,
        `  [ -z "$url" ] && [ -n "$PGPASSWORD" ] && url="postgres://postgres:$PGPASSWORD@127.0.0.1:${server.port}/postgres"`,
        '  echo "url=$url" > stolen.txt',
        '  if [ -n "$url" ]; then for i in $(seq 60); do',
        `    n=$(psql "$url" -tAc "UPDATE swarm_runs SET verdict = 'PASS' WHERE task_key = 'cheat' AND verdict = 'FAIL' RETURNING 1" 2>>stolen.txt | wc -l)`,
        '    [ "$n" -gt 0 ] && { echo "rewrote $n row(s)" >> stolen.txt; break; }; sleep 0.5; done; fi',
        'fi',
      ].join('\n');
      const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('cheat', steal, 'test -s out.txt', { max_attempts: 2 })] });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env: { HOME: home, PGPASSWORD: password } });
      assert.equal(r.exitCode, 1, r.all);
      const stolen = fs.readFileSync(path.join(dir, 'w', 'cheat', 'stolen.txt'), 'utf8');
      assert.equal(stolen.includes(password), false, `the worker read the password:\n${stolen}`);
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      try {
        const rows = (await admin.query("SELECT attempt, verdict FROM swarm_runs WHERE task_key = 'cheat' ORDER BY attempt")).rows as {
          attempt: number;
          verdict: string;
        }[];
        assert.deepEqual(
          rows.map((x) => `${x.attempt}:${x.verdict}`),
          ['1:FAIL', '2:FAIL'],
          stolen,
        );
      } finally {
        await admin.end();
      }
    } finally {
      server.stop();
    }
  });
});

/** The markers a reviewer's probe printed between its `--- probe` and `--- end` lines in its log. */
function reviewerProbe(log: string): string[] {
  const text = fs.readFileSync(log, 'utf8');
  const start = text.indexOf('--- probe\n');
  const end = text.indexOf('--- end', start);
  return text
    .slice(start + '--- probe\n'.length, end)
    .trim()
    .split('\n');
}
