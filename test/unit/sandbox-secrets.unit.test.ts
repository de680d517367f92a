import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { bwrapCommand } from '../../extension/core/process/sandbox';
import { looksLikeCredential, secretCovers, secretPlaces } from '../../extension/core/process/secrets';
import { supervise } from '../../extension/core/process/supervisor';
import { tempDir } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { uncoveredDir } from '../helpers/uncovered';

// The user's secrets in a sandbox (core/process/secrets.ts): the places empty, the credential variables gone.
describe("sandbox: the user's secrets", () => {
  it('looksLikeCredential: tokens, secrets, passwords, API keys, AWS_*, DATABASE_URL, PGPASSWORD, URLs with a password; not proxies, not plain names', () => {
    const yes = [
      'GITHUB_TOKEN',
      'NPM_TOKEN',
      'TOKEN',
      'CLIENT_SECRET',
      'DJANGO_SECRET_KEY',
      'DB_PASSWORD',
      'SMTP_PASSWD',
      'GPG_PASSPHRASE',
      'OPENAI_API_KEY',
      'SENDGRID_APIKEY',
      'AWS_ACCESS_KEY_ID',
      'AWS_REGION',
      'AZURE_CLIENT_SECRET',
      'SSH_PRIVATE_KEY',
      'GCP_CREDENTIALS',
      'DATABASE_URL',
      'PGPASSWORD',
      'MYSQL_PWD',
      'KRB5CCNAME',
      'github_token',
    ];
    for (const name of yes) assert.equal(looksLikeCredential(name, 'x'), true, name);
    assert.equal(looksLikeCredential('CACHE_URL', 'redis://:hunter2@127.0.0.1:6379'), true);
    assert.equal(looksLikeCredential('MONGO', 'mongodb://app:pw@db:27017/x'), true);
    const no = ['PATH', 'HOME', 'TOKENIZERS_PARALLELISM', 'KEYBOARD', 'PASSWORD_RULES_URL', 'CODEX_HOME', 'NODE_OPTIONS', 'MONKEY'];
    for (const name of no) assert.equal(looksLikeCredential(name, 'x'), false, name);
    assert.equal(looksLikeCredential('REPO_URL', 'https://github.com/a/b'), false);
    assert.equal(looksLikeCredential('LOGIN_URL', 'https://user@host/x'), false, 'a user name is no password');
    assert.equal(looksLikeCredential('https_proxy', 'http://me:pw@proxy:3128'), false, 'the engines need their proxy');
    assert.equal(looksLikeCredential('HTTPS_PROXY', 'http://me:pw@proxy:3128'), false);
  });

  it("secretPlaces: the defaults under every home, what variables name (KUBECONFIG a list), XDG_CONFIG_HOME's, extra; an engine's own variable names none", () => {
    const places = secretPlaces(
      ['/h1', '/h2'],
      [{ KUBECONFIG: '/k/a:/k/b:rel', GNUPGHOME: '/g', XDG_CONFIG_HOME: '/x', GOOGLE_APPLICATION_CREDENTIALS: '/adc.json' }],
      ['/extra/file'],
    );
    for (const p of [
      '/h1/.ssh',
      '/h2/.ssh',
      '/h1/.netrc',
      '/h1/.config/verdict',
      '/h1/.ringer',
      '/h2/.config/gh',
      '/k/a',
      '/k/b',
      '/g',
      '/x/verdict',
      '/x/gh',
      '/adc.json',
      '/extra/file',
    ])
      assert.ok(places.includes(p), p);
    assert.ok(!places.includes('rel'));
    assert.ok(!secretPlaces(['/h'], [{ GOOGLE_APPLICATION_CREDENTIALS: '/adc.json' }], [], ['GOOGLE_APPLICATION_CREDENTIALS']).includes('/adc.json'));
  });

  it('secretCovers: existing places at their real paths, folders outermost, nothing holding a kept path, exposed ones shown back', () => {
    const home = tempDir();
    for (const d of ['.ssh', '.aws/sub', 'dotfiles', 'keep/.kube/inside']) fs.mkdirSync(path.join(home, d), { recursive: true });
    fs.writeFileSync(path.join(home, '.ssh', 'known_hosts'), 'x');
    fs.writeFileSync(path.join(home, 'dotfiles', 'netrc'), 'x');
    fs.symlinkSync(path.join(home, 'dotfiles', 'netrc'), path.join(home, '.netrc'));
    fs.writeFileSync(path.join(home, '.pypirc'), 'x');
    const c = secretCovers(
      [
        path.join(home, '.ssh'),
        path.join(home, '.aws'),
        path.join(home, '.aws', 'sub'),
        path.join(home, '.netrc'),
        path.join(home, '.pypirc'),
        path.join(home, '.gnupg'),
        path.join(home, 'keep', '.kube'),
      ],
      [path.join(home, 'keep', '.kube', 'inside')],
      [path.join(home, '.pypirc'), path.join(home, '.ssh', 'known_hosts')],
    );
    assert.deepEqual(c, {
      dirs: [path.join(home, '.ssh'), path.join(home, '.aws')],
      files: [path.join(home, 'dotfiles', 'netrc')],
      back: [path.join(home, '.ssh', 'known_hosts')],
    });
  });

  it('inside bubblewrap: a secret folder is empty and read-only, a secret file reads empty (not refused), an exposed file reads', async function () {
    const probe = await requireSandbox(this);
    const home = uncoveredDir('verdict-unit-secrets-');
    fs.mkdirSync(path.join(home, '.ssh'));
    fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'SECRET-key');
    fs.writeFileSync(path.join(home, '.ssh', 'known_hosts'), 'EXPOSED-hosts');
    fs.writeFileSync(path.join(home, '.npmrc'), 'SECRET-npmrc');
    fs.mkdirSync(path.join(home, 'task'));
    const script = [
      `ls -A ${home}/.ssh | tr '\\n' ' '; echo`,
      `if touch ${home}/.ssh/planted 2>/dev/null; then echo WROTE; else echo refused-write; fi`,
      `test -f ${home}/.npmrc && echo "npmrc: regular, [$(cat ${home}/.npmrc)]"`,
      `cat ${home}/.ssh/known_hosts; echo`,
    ].join('\n');
    const { file, args } = bwrapCommand(
      { binary: probe.binary, network: true, writable: [path.join(home, 'task')], expose: [path.join(home, '.ssh', 'known_hosts')] },
      path.join(home, 'task'),
      '/bin/bash',
      ['-c', script],
      [],
      { HOME: home },
    );
    const r = await execa(file, args, { reject: false, all: true, stdin: 'ignore' });
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(String(r.all), `known_hosts \nrefused-write\nnpmrc: regular, []\nEXPOSED-hosts`);
  });

  it("supervise: a sandboxed step inherits no credential variable but its engine's own; what the step is given stays; unsandboxed: unchanged", async function () {
    const probe = await requireSandbox(this);
    const dir = uncoveredDir('verdict-unit-secrets-env-');
    const inherit = {
      PATH: process.env.PATH,
      HOME: dir,
      GITHUB_TOKEN: 'gh',
      OPENAI_API_KEY: 'own',
      AWS_PROFILE: 'p',
      DATABASE_URL: 'postgres://u:p@h/d',
      PLAIN: 'plain',
    };
    const run = async (sandboxed: boolean) => {
      const log = path.join(dir, `env-${sandboxed}.log`);
      await supervise({
        file: 'bash',
        args: ['-c', 'env | grep -E "^(GITHUB_TOKEN|OPENAI_API_KEY|AWS_PROFILE|DATABASE_URL|PLAIN|PORT_TOKEN)=" | sort'],
        cwd: dir,
        inherit,
        env: { PORT_TOKEN: 'given' },
        logFile: log,
        timeoutMs: 30000,
        sandbox: sandboxed ? { binary: probe.binary, writable: [dir], network: true, credentialEnv: ['OPENAI_API_KEY'] } : null,
      });
      return fs.readFileSync(log, 'utf8').trim().split('\n');
    };
    assert.deepEqual(await run(true), ['OPENAI_API_KEY=own', 'PLAIN=plain', 'PORT_TOKEN=given']);
    assert.deepEqual(await run(false), [
      'AWS_PROFILE=p',
      'DATABASE_URL=postgres://u:p@h/d',
      'GITHUB_TOKEN=gh',
      'OPENAI_API_KEY=own',
      'PLAIN=plain',
      'PORT_TOKEN=given',
    ]);
  });
});
