import path from 'node:path';
import { resolveHome } from '../core/config/home';
import { archivesLogPath, NotAnArchiveError, verifyArchive, type ArchiveVerification } from '../core/store/archive';
import { InputError, type Io } from './io';

/** Flags of `verdict verify-archive`. */
export interface VerifyArchiveFlags {
  /** The home whose archives.jsonl recorded the archive (default VERDICT_HOME or ~/.verdict). */
  home?: string;
  json?: boolean;
}

/**
 * `verdict verify-archive FILE [--home DIR] [--json]`: every member against SHA256SUMS, nothing missing or added,
 * and SHA256SUMS against the hash recorded in `<home>/archives.jsonl` when the archive was written.
 * @returns 0 intact, 1 tampered (or not recorded in this home: nothing vouches for it)
 * @throws InputError (exit 2) when the file is missing or not a Verdict archive
 */
export async function verifyArchiveCommand(file: string, flags: VerifyArchiveFlags, io: Io): Promise<number> {
  const home = resolveHome(flags.home);
  let v: ArchiveVerification;
  try {
    v = await verifyArchive(path.resolve(file), archivesLogPath(home));
  } catch (e) {
    if (e instanceof NotAnArchiveError) throw new InputError(e.message);
    throw new InputError(`cannot verify ${file}: ${(e as Error).message}`);
  }
  if (flags.json) {
    io.out(JSON.stringify(v, null, 2));
    return v.intact ? 0 : 1;
  }
  io.out(`${v.file}: run ${v.run_id}, ${v.members} members, SHA256SUMS sha256 ${v.manifest_sha256}`);
  if (v.intact) {
    io.out(
      `intact: every member matches SHA256SUMS, and SHA256SUMS is the one recorded on ${v.recorded?.created_at} (${v.recorded?.host}) in ${archivesLogPath(home)}`,
    );
    return 0;
  }
  io.out(`TAMPERED: ${v.findings[0]}`);
  for (const f of v.findings.slice(1, 20)) io.out(`  also: ${f}`);
  if (v.findings.length > 20) io.out(`  … and ${v.findings.length - 20} more (--json lists them all)`);
  return 1;
}
