import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract as tarExtract, pack as tarPack } from 'tar-stream';
import type { RunState } from '../../../schemas/run-state';
import { withLock } from '../fs/lock';
import { shortHost } from '../host/hostname';
import { appendChained, headFileSource, verifyChains, type ChainFinding } from './chain';
import { readCompleteLines } from './log-lines';

/**
 * `verdict archive`: one tar file with everything a run's verdicts rest on, and a SHA-256 manifest of it whose own
 * hash is recorded in `<home>/archives.jsonl` (hash-chained like the eval log, heads in `archives.chain.json`), so
 * an archive whose members were changed and whose manifest was recomputed still fails verification.
 *
 * Members, all under `<run_id>/`:
 * - `run/…`: every file of `<home>/runs/<run_id>/`: the frozen manifest (manifest.json), state.json, and each
 *   attempt's `tasks/<key>/attempt-<n>/{prompt.md,worker.log,check.log,receipt.json}`
 * - `rows.jsonl`: the run's eval rows, the lines of runs.jsonl verbatim (prev_hash included)
 * - worktree mode: `diffs/<key>.diff` (`git diff --binary base..branch`, no external diff, no textconv) and
 *   `branches.bundle` (`git bundle create` of the task branches, thin: it needs the base commit to unbundle)
 * - `archive.json`: what the archive is (run, base commit, branches and their commits, notes)
 * - `SHA256SUMS`: `<sha256>  <member>` for every other member, sorted by name (sha256sum -c reads it)
 */

/** The file name of the SHA-256 manifest inside an archive. */
export const SUMS_NAME = 'SHA256SUMS';
/** `archive.json`'s format tag. */
export const ARCHIVE_FORMAT = 'verdict-archive/1';

/** `<home>/archives.jsonl`: one chained row per archive written. */
export function archivesLogPath(home: string): string {
  return path.join(home, 'archives.jsonl');
}

/**
 * The git a worktree-mode archive needs, handed in by the caller (store/ sits below git/ in the layers; the CLI
 * builds it with gitFor, the only way Verdict runs git).
 */
export interface ArchiveGit {
  /** The commit `refs/heads/<branch>` points at; null when there is no such branch. */
  tip(branch: string): Promise<string | null>;
  /** `git diff --no-ext-diff --no-textconv --binary base..tip`. */
  diff(base: string, tip: string): Promise<string>;
  /** `git bundle create file <refs…> ^base`. */
  bundle(file: string, refs: string[], base: string): Promise<void>;
}

/** Where {@link createArchive} reads and writes. */
export interface ArchiveSources {
  runId: string;
  /** `<home>/runs/<run_id>`: the run's records. */
  runDir: string;
  /** The eval log whose rows of this run go in (`<home>/runs.jsonl`). */
  evalLog: string;
  /** Where the archive's manifest hash is recorded (`<home>/archives.jsonl`). */
  archivesLog: string;
  /** Git for the run's repository (worktree mode); null: no diffs, no bundle. */
  git: ((repo: string) => ArchiveGit) | null;
}

/** One row of archives.jsonl. */
export interface ArchiveRecord {
  run_id: string;
  /** The archive as written (absolute). It may move later; verification goes by hash, not path. */
  file: string;
  /** SHA-256 of the SHA256SUMS member: what verify-archive compares. */
  manifest_sha256: string;
  /** SHA-256 of the whole tar file as written. */
  archive_sha256: string;
  members: number;
  bytes: number;
  created_at: string;
  host: string;
  prev_hash: string | null;
}

/** What {@link createArchive} wrote. */
export interface ArchiveResult {
  file: string;
  record: ArchiveRecord;
  /** Member names in the order written. */
  members: string[];
  /** What could not be included, and why (e.g. a branch that no longer exists). */
  notes: string[];
}

function sha256(data: Buffer | string): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/** Regular files under `dir`, relative, sorted; symlinks and other special files are listed in `skipped`. */
function filesUnder(dir: string, skipped: string[], rel = ''): string[] {
  const out: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const r = rel ? `${rel}/${ent.name}` : ent.name;
    if (ent.isDirectory()) out.push(...filesUnder(dir, skipped, r));
    else if (ent.isFile() && !ent.name.endsWith('.tmp')) out.push(r);
    else if (!ent.isFile()) skipped.push(r);
  }
  return out;
}

/**
 * Writes the archive of run `runId` to `outFile` (refused when it exists) and records its manifest's hash in
 * `<home>/archives.jsonl`.
 * @throws Error naming what is missing: the run's records, its state file; or git's error for a diff or bundle
 */
export async function createArchive(src: ArchiveSources, outFile: string): Promise<ArchiveResult> {
  const { runId, runDir: dir } = src;
  if (!fs.existsSync(path.join(dir, 'state.json')) && !fs.existsSync(path.join(dir, 'manifest.json')))
    throw new Error(`no run ${runId} (no ${path.join(dir, 'state.json')})`);
  if (fs.existsSync(outFile)) throw new Error(`${outFile} exists; archives are never overwritten (choose another --out)`);
  let state: RunState | null = null;
  try {
    state = JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')) as RunState;
  } catch {
    state = null;
  }
  const notes: string[] = [];
  const members = new Map<string, Buffer>();
  const put = (name: string, data: Buffer) => members.set(`${runId}/${name}`, data);

  const skipped: string[] = [];
  for (const rel of filesUnder(dir, skipped)) put(`run/${rel}`, fs.readFileSync(path.join(dir, rel)));
  for (const s of skipped) notes.push(`run/${s}: not a regular file (symlink or special), not archived`);
  if (!members.has(`${runId}/run/manifest.json`)) notes.push('the run has no frozen manifest (runs/<run_id>/manifest.json)');

  put(
    'rows.jsonl',
    Buffer.from(
      runRows(src.evalLog, runId)
        .map((r) => r + '\n')
        .join(''),
    ),
  );
  const branches = await putBranches(src, state, put, notes);

  const info = {
    format: ARCHIVE_FORMAT,
    run_id: runId,
    run_name: state?.runName ?? null,
    created_at: new Date().toISOString(),
    host: shortHost(),
    repo: state?.repo ?? null,
    base_sha: state?.baseSha ?? null,
    branches,
    notes,
  };
  put('archive.json', Buffer.from(JSON.stringify(info, null, 2) + '\n'));
  const names = [...members.keys()].sort();
  const sums = Buffer.from(names.map((n) => `${sha256(members.get(n) as Buffer)}  ${n.slice(runId.length + 1)}\n`).join(''));
  put(SUMS_NAME, sums);

  const order = [...names, `${runId}/${SUMS_NAME}`];
  await writeTar(outFile, members, order);

  const tarBytes = fs.readFileSync(outFile);
  const log = src.archivesLog;
  fs.mkdirSync(path.dirname(log), { recursive: true });
  const record = await withLock(log, async () =>
    appendChained(
      log,
      {
        run_id: runId,
        file: path.resolve(outFile),
        manifest_sha256: sha256(sums),
        archive_sha256: sha256(tarBytes),
        members: order.length,
        bytes: tarBytes.length,
        created_at: info.created_at,
        host: info.host,
      },
      (line) => fs.appendFileSync(log, line),
    ),
  );
  return { file: path.resolve(outFile), record: record as ArchiveRecord, members: order, notes };
}

/** The eval log's rows of run `runId`, as written (complete lines only; lines that are not JSON skipped). */
function runRows(evalLog: string, runId: string): string[] {
  const rows: string[] = [];
  readCompleteLines(evalLog, 0, ({ text }) => {
    if (!text.includes(runId)) return;
    try {
      if ((JSON.parse(text) as { run_id?: unknown }).run_id === runId) rows.push(text);
    } catch {
      // not a row
    }
  });
  return rows;
}

/**
 * Puts each task branch's diff against the run's base (`diffs/<key>.diff`) and a bundle of the branches that moved
 * (`branches.bundle`), for a worktree-mode run whose repository and base are recorded; says in `notes` what is left out.
 * @returns each task's branch and its tip (null when the branch is gone)
 */
async function putBranches(
  src: ArchiveSources,
  state: RunState | null,
  put: (name: string, data: Buffer) => void,
  notes: string[],
): Promise<Record<string, { branch: string; commit: string | null }>> {
  const branches: Record<string, { branch: string; commit: string | null }> = {};
  const worktree = !!(state?.worktrees && state.repo && state.baseSha);
  if (worktree && state && src.git) {
    const git = src.git(state.repo as string);
    const base = state.baseSha as string;
    const refs: string[] = [];
    for (const t of state.tasks) {
      if (!t.branch) continue;
      const tip = await git.tip(t.branch);
      if (!tip) {
        notes.push(`task ${t.key}: branch ${t.branch} no longer exists in ${state.repo}; no diff`);
        branches[t.key] = { branch: t.branch, commit: null };
        continue;
      }
      branches[t.key] = { branch: t.branch, commit: tip };
      put(`diffs/${t.key}.diff`, Buffer.from(await git.diff(base, tip)));
      refs.push(`refs/heads/${t.branch}`);
    }
    const ahead = Object.values(branches).some((b) => b.commit && b.commit !== base);
    if (refs.length && ahead) {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-bundle-'));
      try {
        const bundle = path.join(tmp, 'branches.bundle');
        await git.bundle(bundle, refs, base);
        put('branches.bundle', fs.readFileSync(bundle));
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    } else if (refs.length) notes.push('no task branch has commits beyond the base: no bundle');
  } else
    notes.push(
      state?.worktrees
        ? `worktree mode without ${src.git ? 'a recorded repository or base commit' : 'git'}: no diffs, no bundle`
        : 'plain mode: no branches, no diffs, no bundle',
    );
  return branches;
}

/** Writes `members` (name → bytes) in `order` as a tar file `outFile` (refused when it exists: flags wx). */
async function writeTar(outFile: string, members: Map<string, Buffer>, order: string[]): Promise<void> {
  const pack = tarPack();
  const mtime = new Date();
  const out = fs.createWriteStream(outFile, { flags: 'wx' });
  const done = pipeline(pack, out);
  for (const name of order) {
    const data = members.get(name) as Buffer;
    await new Promise<void>((resolve, reject) => pack.entry({ name, size: data.length, mode: 0o644, mtime }, data, (err) => (err ? reject(err) : resolve())));
  }
  pack.finalize();
  await done;
}

/** What {@link verifyArchive} found. */
export interface ArchiveVerification {
  intact: boolean;
  file: string;
  run_id: string;
  members: number;
  manifest_sha256: string;
  archive_sha256: string;
  /** The archives.jsonl row whose manifest hash matches, null when none does. */
  recorded: ArchiveRecord | null;
  /** One line each: what does not match. Empty when intact. */
  findings: string[];
  /** Findings in archives.jsonl's own chain (an edited record shows here). */
  recordLog: ChainFinding[];
}

/** Thrown for a file that is not a readable Verdict archive (exit 2, not "tampered"). */
export class NotAnArchiveError extends Error {
  override name = 'NotAnArchiveError';
}

async function readTar(file: string): Promise<{ entries: { name: string; type: string; data: Buffer }[] }> {
  const entries: { name: string; type: string; data: Buffer }[] = [];
  const ex = tarExtract();
  const reading = (async () => {
    for await (const entry of ex) {
      const chunks: Buffer[] = [];
      for await (const c of entry) chunks.push(Buffer.from(c as Uint8Array));
      entries.push({ name: entry.header.name, type: entry.header.type, data: Buffer.concat(chunks) });
    }
  })();
  await Promise.all([pipeline(fs.createReadStream(file), ex), reading]);
  return { entries };
}

/**
 * Checks an archive: every member against its SHA256SUMS, no member missing or added, and the SHA256SUMS itself
 * against the hash recorded in `archivesLog` (`<home>/archives.jsonl`) when the archive was written (so recomputing the inner
 * manifest after changing a member does not help); archives.jsonl's own chain is checked too.
 * @throws NotAnArchiveError when the file cannot be read as a tar with archive.json and SHA256SUMS
 */
export async function verifyArchive(file: string, archivesLog: string): Promise<ArchiveVerification> {
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new NotAnArchiveError(`no archive file ${file}`);
  let entries: { name: string; type: string; data: Buffer }[];
  try {
    ({ entries } = await readTar(file));
  } catch (e) {
    throw new NotAnArchiveError(`${file} is not a readable tar archive: ${(e as Error).message}`);
  }
  const sumsEntry = entries.find((e) => e.name.endsWith(`/${SUMS_NAME}`) && e.name.split('/').length === 2);
  if (!sumsEntry) throw new NotAnArchiveError(`${file} is not a Verdict archive: no <run_id>/${SUMS_NAME}`);
  const runId = sumsEntry.name.slice(0, -SUMS_NAME.length - 1);
  const findings: string[] = [];
  const seen = new Map<string, Buffer>();
  for (const e of entries) {
    if (e.type !== 'file') findings.push(`${e.name}: a ${e.type} entry (archives hold only files)`);
    else if (!e.name.startsWith(`${runId}/`)) findings.push(`${e.name}: outside ${runId}/`);
    else if (seen.has(e.name)) findings.push(`${e.name}: appears twice (a later copy would replace the first on extraction)`);
    else seen.set(e.name, e.data);
  }
  const listed = new Set<string>();
  for (const [i, line] of sumsEntry.data.toString('utf8').split('\n').entries()) {
    if (!line) continue;
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    if (!m) {
      findings.push(`${SUMS_NAME} line ${i + 1} is not "<sha256>  <name>"`);
      continue;
    }
    const [, hash, rel] = m as unknown as [string, string, string];
    const name = `${runId}/${rel}`;
    listed.add(name);
    const data = seen.get(name);
    if (!data) findings.push(`${rel}: listed in ${SUMS_NAME} but missing from the archive`);
    else if (sha256(data) !== hash) findings.push(`${rel}: its SHA-256 is not the one in ${SUMS_NAME} (the member was changed)`);
  }
  for (const name of seen.keys()) {
    if (name !== sumsEntry.name && !listed.has(name)) findings.push(`${name.slice(runId.length + 1)}: in the archive but not in ${SUMS_NAME} (added)`);
  }
  if (!seen.has(`${runId}/archive.json`)) findings.push('archive.json is missing');

  const manifestHash = sha256(sumsEntry.data);
  const log = archivesLog;
  const records: ArchiveRecord[] = [];
  readCompleteLines(log, 0, ({ text }) => {
    try {
      const r = JSON.parse(text) as ArchiveRecord;
      if (r && r.run_id === runId) records.push(r);
    } catch {
      // verifyChains below reports what a corrupt line breaks
    }
  });
  const recorded = records.find((r) => r.manifest_sha256 === manifestHash) ?? null;
  if (!recorded) {
    if (records.length)
      findings.unshift(
        `${SUMS_NAME} (sha256 ${manifestHash}) is not the manifest recorded for run ${runId} in ${log} (${records.map((r) => r.manifest_sha256.slice(0, 12)).join(', ')}): the archive was changed and its manifest recomputed`,
      );
    else findings.unshift(`no archive of run ${runId} is recorded in ${log}: nothing vouches for this file (another home? use --home)`);
  }
  const head = headFileSource(log);
  const chain = fs.existsSync(log) ? verifyChains(log, head ? [head] : [], (r) => `archive of ${String(r.run_id)}`) : null;
  const recordLog = chain?.findings ?? [];
  for (const f of recordLog) findings.push(`${path.basename(log)}: ${f.message}`);
  return {
    intact: findings.length === 0,
    file: path.resolve(file),
    run_id: runId,
    members: seen.size,
    manifest_sha256: manifestHash,
    archive_sha256: sha256(fs.readFileSync(file)),
    recorded,
    findings,
    recordLog,
  };
}
