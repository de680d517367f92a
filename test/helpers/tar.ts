// Reading and writing tar archives in tests (verdict archive writes one tar per run: store/archive.ts).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { extract, pack } from 'tar-stream';

/** Every member of the tar at `file`, by name. */
export async function readTar(file: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const ex = extract();
  const reading = (async () => {
    for await (const entry of ex) {
      const chunks: Buffer[] = [];
      for await (const c of entry) chunks.push(Buffer.from(c as Uint8Array));
      out.set(entry.header.name, Buffer.concat(chunks));
    }
  })();
  await Promise.all([pipeline(fs.createReadStream(file), ex), reading]);
  return out;
}

/** Writes `members` (name → content) as a tar at `file`. */
export async function writeTar(file: string, members: Map<string, Buffer>): Promise<void> {
  const p = pack();
  const done = pipeline(p, fs.createWriteStream(file));
  for (const [name, data] of members) p.entry({ name, size: data.length }, data);
  p.finalize();
  await done;
}

/** SHA-256 of `b`, hex. */
export const sha = (b: Buffer): string => crypto.createHash('sha256').update(b).digest('hex');
