// Builds the .vsix the way a user does (`npm run package`: vscode:prepublish's production build, then vsce), in a
// copy of the repository's files, so the repository's own dist/ (the development build the other tests run) is
// left as it is. Used by test/e2e/package.e2e.test.ts and test/integration/run.mjs. Plain JS: run.mjs imports it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

/**
 * Copies the files git knows of (tracked, and untracked but not ignored) from `repo` into a fresh temporary folder,
 * links its node_modules, and runs `npm run package` there.
 * @returns the .vsix path, everything the build printed, its exit code, and the folder (the caller removes it)
 * @throws Error when git cannot list the files
 */
export function packageVsix(repo) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-package-'));
  const listed = spawnSync('git', ['-C', repo, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed in ${repo}: ${listed.stderr}`);
  for (const rel of listed.stdout.split('\0').filter(Boolean)) {
    const from = path.join(repo, rel);
    if (!fs.existsSync(from) || fs.lstatSync(from).isDirectory() || rel === 'node_modules') continue; // deleted, or the node_modules link itself
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, rel));
  }
  fs.symlinkSync(fs.realpathSync(path.join(repo, 'node_modules')), path.join(dir, 'node_modules'));
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['run', 'package'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { vsix: path.join(dir, 'verdict.vsix'), output: `${r.stdout}${r.stderr}`, exitCode: r.status ?? 1, dir };
}

/**
 * The entries of a zip file (a .vsix is one), from its central directory: name and uncompressed size in bytes.
 * @throws Error when the file has no end-of-central-directory record
 */
export function zipEntries(file) {
  const buf = fs.readFileSync(file);
  let end = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65535); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new Error(`${file}: not a zip file (no end-of-central-directory record)`);
  const count = buf.readUInt16LE(end + 10);
  let at = buf.readUInt32LE(end + 16);
  const entries = [];
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: damaged central directory at ${at}`);
    const size = buf.readUInt32LE(at + 24);
    const nameLength = buf.readUInt16LE(at + 28);
    const extra = buf.readUInt16LE(at + 30);
    const comment = buf.readUInt16LE(at + 32);
    entries.push({
      name: buf.toString('utf8', at + 46, at + 46 + nameLength),
      size,
      method: buf.readUInt16LE(at + 10),
      compressed: buf.readUInt32LE(at + 20),
      local: buf.readUInt32LE(at + 42),
    });
    at += 46 + nameLength + extra + comment;
  }
  return entries;
}

/**
 * Extracts a zip file (stored or deflated entries: what vsce writes) into `dir`.
 * @throws Error on another compression method or an entry whose name leaves `dir`
 */
export function extractZip(file, dir) {
  const buf = fs.readFileSync(file);
  for (const e of zipEntries(file)) {
    const target = path.resolve(dir, e.name);
    if (!target.startsWith(path.resolve(dir) + path.sep)) throw new Error(`${file}: entry ${e.name} leaves the folder`);
    if (e.name.endsWith('/')) continue;
    const start = e.local + 30 + buf.readUInt16LE(e.local + 26) + buf.readUInt16LE(e.local + 28);
    const data = buf.subarray(start, start + e.compressed);
    if (e.method !== 0 && e.method !== 8) throw new Error(`${file}: ${e.name} uses compression method ${e.method}`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, e.method === 8 ? zlib.inflateRawSync(data) : data);
  }
}
