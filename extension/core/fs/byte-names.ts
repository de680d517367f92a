/**
 * File names as JavaScript strings without losing a byte. Linux names are bytes, and Node decodes them as UTF-8 unless
 * asked for Buffers: a name that is not valid UTF-8 (`caf\xe9.txt`, Latin-1) comes back with U+FFFD in it, which names
 * another file or none, so a walk that lists it cannot stat, read, copy or remove it. Here a name is decoded as UTF-8
 * where it is valid, and each byte of an invalid sequence becomes the lone surrogate U+DC80..U+DCFF — the
 * "surrogateescape" error handler of PEP 383 (Python's os.fsdecode). Valid UTF-8 never decodes to a lone surrogate, so
 * the mapping is one-to-one; a name that is valid UTF-8 is the string Node would give; JSON keeps lone surrogates
 * (`"\udce9"`), so such a name survives a record on disk. {@link fsPath} turns one back into what the file system
 * takes.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The lone surrogates that stand for bytes 0x80..0xFF. */
const ESCAPE_LOW = 0xdc80;
const ESCAPE_HIGH = 0xdcff;

/** `bytes` as a string: UTF-8 where valid, each other byte as U+DC80 + (byte − 0x80). */
export function nameFromBytes(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  if (!text.includes('\ufffd') || Buffer.from(text, 'utf8').equals(bytes)) return text;
  let out = '';
  let at = 0;
  while (at < bytes.length) {
    const b = bytes[at] as number;
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    const seq = len ? bytes.subarray(at, at + len) : null;
    if (seq && seq.length === len && Buffer.from(seq.toString('utf8'), 'utf8').equals(seq)) {
      out += seq.toString('utf8');
      at += len;
    } else {
      out += String.fromCharCode(ESCAPE_LOW + b - 0x80);
      at += 1;
    }
  }
  return out;
}

/** Whether `name` holds a byte escape (it is no valid UTF-8 name). */
export function hasByteEscape(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= ESCAPE_LOW && c <= ESCAPE_HIGH && !isHigh(name.charCodeAt(i - 1))) return true;
  }
  return false;
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

/** The bytes `name` stands for (the inverse of {@link nameFromBytes}). */
export function bytesOfName(name: string): Buffer {
  if (!hasByteEscape(name)) return Buffer.from(name, 'utf8');
  const parts: Buffer[] = [];
  let run = '';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= ESCAPE_LOW && c <= ESCAPE_HIGH && !isHigh(name.charCodeAt(i - 1))) {
      parts.push(Buffer.from(run, 'utf8'), Buffer.from([c - ESCAPE_LOW + 0x80]));
      run = '';
    } else run += name[i];
  }
  parts.push(Buffer.from(run, 'utf8'));
  return Buffer.concat(parts);
}

/**
 * `dir` joined with the relative name `rel` (`/`-separated, possibly holding byte escapes), as the file system takes
 * it: the string `path.join` gives when `rel` is valid UTF-8, else the exact bytes.
 */
export function fsPath(dir: string, rel: string): string | Buffer {
  if (!hasByteEscape(rel)) return path.join(dir, rel);
  return Buffer.concat([Buffer.from(`${dir.replace(/\/+$/, '')}/`, 'utf8'), bytesOfName(rel)]);
}

/** The names in the folder `dir`, decoded by {@link nameFromBytes}. @throws as fs.readdirSync */
export function readNames(dir: string | Buffer): string[] {
  return fs.readdirSync(dir, { encoding: 'buffer' }).map(nameFromBytes);
}

/** The entries of the folder `dir` with their types, names decoded by {@link nameFromBytes}. @throws as fs.readdirSync */
export function readEntries(dir: string | Buffer): { name: string; dirent: fs.Dirent<Buffer> }[] {
  return fs.readdirSync(dir, { withFileTypes: true, encoding: 'buffer' }).map((dirent) => ({ name: nameFromBytes(dirent.name), dirent }));
}

/** A symbolic link's target, decoded by {@link nameFromBytes}. @throws as fs.readlinkSync */
export function readLinkName(file: string | Buffer): string {
  return nameFromBytes(fs.readlinkSync(file, { encoding: 'buffer' }));
}

/**
 * A path's bytes as a person reads them, quoted as git quotes a path (git-config(1) core.quotePath): plain when it is
 * valid UTF-8 without control characters, `"`, or `\`; otherwise in double quotes with `\t`, `\n`, `\"`, `\\` and
 * every other byte below 0x20, 0x7f and every byte of an invalid UTF-8 sequence as a three-digit octal escape.
 */
export function showPath(p: Buffer): string {
  const text = p.toString('utf8');
  const plain = Buffer.from(text, 'utf8').equals(p) && !/[\x00-\x1f\x7f"\\]/.test(text);
  if (plain) return text;
  let out = '';
  let at = 0;
  while (at < p.length) {
    const b = p[at] as number;
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    const seq = len > 1 ? p.subarray(at, at + len) : null;
    if (seq && seq.length === len && Buffer.from(seq.toString('utf8'), 'utf8').equals(seq)) {
      out += seq.toString('utf8');
      at += len;
      continue;
    }
    const c = String.fromCharCode(b);
    out +=
      b === 0x09 ? '\\t' : b === 0x0a ? '\\n' : c === '"' ? '\\"' : c === '\\' ? '\\\\' : b < 0x20 || b >= 0x7f ? `\\${b.toString(8).padStart(3, '0')}` : c;
    at += 1;
  }
  return `"${out}"`;
}

/** A byte-names string as a person reads it: {@link showPath} of its bytes (a valid, plain name is itself). */
export function showName(name: string): string {
  return showPath(bytesOfName(name));
}
