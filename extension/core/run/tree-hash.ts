import crypto from 'node:crypto';
import fs from 'node:fs';
import { bytesOfName, fsPath, readEntries } from '../fs/byte-names';

/**
 * The plain-mode seal: `sha256:<hex>` over every entry of `dir` in sorted order — its relative path, its kind and mode
 * bits, and its content's SHA-256 (a symlink: its target) — so a row can name exactly the tree its check judged.
 * Folders named `.git` are left out (a worker's own repository is not the deliverable). A file larger than
 * TREE_HASH_CONTENT_BYTES is hashed by its size and mtime (a worker's 20 × 2 GB of sparse files must not hold the
 * orchestrator for minutes). Never throws: an entry that cannot be read is hashed as `unreadable`.
 */
export const TREE_HASH_CONTENT_BYTES = 16 * 1024 * 1024;

export function treeHash(dir: string): string {
  const h = crypto.createHash('sha256');
  // Each record starts with the entry's path as bytes (fs/byte-names.ts): a name that is not valid UTF-8 is hashed by
  // its own bytes and its content read, never taken for another name. For valid names the text is as it always was.
  const record = (rel: string, rest: string) => h.update(Buffer.concat([bytesOfName(rel), Buffer.from(rest, 'utf8')]));
  const walk = (rel: string) => {
    let entries: { name: string; dirent: fs.Dirent<Buffer> }[];
    try {
      entries = readEntries(fsPath(dir, rel));
    } catch {
      record(rel, '\0unreadable\n');
      return;
    }
    for (const { name } of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const child = rel ? `${rel}/${name}` : name;
      const abs = fsPath(dir, child);
      try {
        const st = fs.lstatSync(abs);
        if (st.isDirectory()) {
          if (name === '.git') continue;
          record(child, `\0dir\0${st.mode & 0o7777}\n`);
          walk(child);
        } else if (st.isSymbolicLink()) {
          h.update(Buffer.concat([bytesOfName(child), Buffer.from('\0link\0'), fs.readlinkSync(abs, { encoding: 'buffer' }), Buffer.from('\n')]));
        } else if (st.isFile() && st.size > TREE_HASH_CONTENT_BYTES) {
          record(child, `\0big\0${st.mode & 0o7777}\0${st.size}\0${st.mtimeMs}\n`);
        } else if (st.isFile()) {
          record(child, `\0file\0${st.mode & 0o7777}\0${crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex')}\n`);
        } else record(child, '\0other\n');
      } catch {
        record(child, '\0unreadable\n');
      }
    }
  };
  walk('');
  return `sha256:${h.digest('hex')}`;
}
