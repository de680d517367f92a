/**
 * Reading a consensus group's inputs folder (docs/workflows.md "Consensus"): the files an inputs command wrote into
 * $VERDICT_CASES, or an inputs engine into its working directory (inputs-engine.ts). Whoever wrote the folder may be
 * careless or hostile, so only what is safe to read is read: regular files at the top of the folder, each opened
 * without following a link and at most CASE_FILE_BYTES, the first `max` of them by name; links (to a candidate's tree,
 * to /etc/passwd), folders, FIFOs and other special files, and larger files are left out and said in one note per kind,
 * and a folder of very many entries is read no further than CASES_SCAN_ENTRIES.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The most bytes of one input file read; a larger one is left out (and said). */
export const CASE_FILE_BYTES = 1024 * 1024;
/** The most entries of an inputs folder looked at; past it the rest is not read (and said). */
export const CASES_SCAN_ENTRIES = 100_000;

/** What an inputs folder held. */
export interface CaseFiles {
  /** Whether the folder held any entry at all (files win over an inputs command's stdout when it did). */
  any: boolean;
  /** The text of the first `max` usable files, in name order (byte order of the names). */
  inputs: string[];
  /** How many usable files there were (`inputs` holds the first `max` of them). */
  given: number;
  /** What was left out and why, one sentence per kind (`where` names the folder). */
  notes: string[];
}

/**
 * Reads the inputs in `dir` (see the file's comment). `where` names the folder in the notes (`$VERDICT_CASES`, `the
 * inputs folder`). Never follows a link; never throws but for `dir` itself not being readable.
 */
export function readCases(dir: string, max: number, where: string): CaseFiles {
  const usable: string[] = [];
  const special: string[] = [];
  const large: string[] = [];
  let entries = 0;
  let cut = false;
  const d = fs.opendirSync(dir);
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) {
      if (++entries > CASES_SCAN_ENTRIES) {
        cut = true;
        break;
      }
      const st = fs.lstatSync(path.join(dir, e.name), { throwIfNoEntry: false });
      if (!st) continue;
      if (!st.isFile()) special.push(e.name);
      else if (st.size > CASE_FILE_BYTES) large.push(e.name);
      else usable.push(e.name);
    }
  } finally {
    d.closeSync();
  }
  usable.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const inputs: string[] = [];
  // A file that turned out not to be readable as one (changed since it was listed) is left out like a special file.
  let unreadable = 0;
  for (const name of usable) {
    if (inputs.length >= max) break;
    const text = readOne(path.join(dir, name));
    if (text !== null) inputs.push(text);
    else (special.push(name), unreadable++);
  }
  const given = usable.length - unreadable;
  const first = (names: string[]) => [...names].sort().slice(0, 3).join(', ');
  const notes: string[] = [];
  if (special.length)
    notes.push(
      `${where}: ${special.length} entr${special.length === 1 ? 'y is' : 'ies are'} not a regular file (a link, a folder or a special file): left out (${first(special)})`,
    );
  if (large.length) notes.push(`${where}: ${large.length} file(s) hold more than ${CASE_FILE_BYTES} bytes: left out (${first(large)})`);
  if (cut) notes.push(`${where} holds more than ${CASES_SCAN_ENTRIES} entries: the rest was not read`);
  return { any: entries > 0, inputs, given, notes };
}

/** One input file's text: opened without following a link, a regular file of at most CASE_FILE_BYTES, else null. */
function readOne(file: string): string | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > CASE_FILE_BYTES) return null;
    // One byte more than it said it holds: a file still growing is seen to be larger.
    const buf = Buffer.alloc(Math.min(st.size, CASE_FILE_BYTES) + 1);
    let n = 0;
    for (let r = -1; r !== 0 && n < buf.length; n += r) r = fs.readSync(fd, buf, n, buf.length - n, null);
    return n > st.size || n > CASE_FILE_BYTES ? null : buf.subarray(0, n).toString('utf8');
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}
