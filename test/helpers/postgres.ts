import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { tempDir } from './fixtures';

/** The folder holding initdb and pg_ctl (Debian's postgresql), or null when PostgreSQL is not installed. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (fs.existsSync(path.join(root, v, 'bin', 'pg_ctl'))) return path.join(root, v, 'bin');
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/**
 * A throwaway PostgreSQL cluster on 127.0.0.1, in a temporary folder, run as the postgres user: trust auth, or with
 * `password` every connection needs it (scram-sha-256), as a shared scoreboard's server would.
 */
export class TestPostgres {
  private constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
    readonly password: string | null = null,
  ) {}

  /** postgres://postgres[:password]@127.0.0.1:PORT/postgres */
  get url(): string {
    return `postgres://postgres${this.password ? `:${encodeURIComponent(this.password)}` : ''}@127.0.0.1:${this.port}/postgres`;
  }

  /** initdb + start. @throws when the binaries fail */
  static async create(bin: string, opts: { password?: string } = {}): Promise<TestPostgres> {
    const dir = tempDir('verdict-pg-');
    fs.chmodSync(dir, 0o777);
    const data = path.join(dir, 'data');
    const pg = new TestPostgres(bin, dir, await freePort(), opts.password ?? null);
    if (opts.password) {
      const pwfile = path.join(dir, 'pwfile');
      fs.writeFileSync(pwfile, `${opts.password}\n`, { mode: 0o644 });
      pg.asPostgres(path.join(bin, 'initdb'), ['-D', data, '-A', 'scram-sha-256', '--pwfile', pwfile, '-U', 'postgres', '--no-sync']);
      fs.rmSync(pwfile);
    } else pg.asPostgres(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    pg.start();
    return pg;
  }

  private asPostgres(file: string, args: string[]): void {
    const asRoot = process.getuid?.() === 0;
    execFileSync(asRoot ? 'runuser' : file, asRoot ? ['-u', 'postgres', '--', file, ...args] : args, { stdio: 'pipe', cwd: this.dir });
  }

  start(): void {
    this.asPostgres(path.join(this.bin, 'pg_ctl'), [
      '-D',
      path.join(this.dir, 'data'),
      '-l',
      path.join(this.dir, 'log'),
      '-w',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  stop(): void {
    this.asPostgres(path.join(this.bin, 'pg_ctl'), ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }
}
