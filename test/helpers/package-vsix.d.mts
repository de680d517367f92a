/** Types of package-vsix.mjs (plain JS so test/integration/run.mjs can import it). */
export interface PackagedVsix {
  /** The .vsix built (absent when exitCode is not 0). */
  vsix: string;
  /** Everything `npm run package` printed (stdout, then stderr). */
  output: string;
  exitCode: number;
  /** The temporary copy of the repository it was built in; the caller removes it. */
  dir: string;
}
export interface ZipEntry {
  name: string;
  /** Uncompressed size, bytes. */
  size: number;
  /** 0 stored, 8 deflated. */
  method: number;
  /** Compressed size, bytes. */
  compressed: number;
  /** Offset of the entry's local header. */
  local: number;
}
export function packageVsix(repo: string): PackagedVsix;
export function zipEntries(file: string): ZipEntry[];
export function extractZip(file: string, dir: string): void;
