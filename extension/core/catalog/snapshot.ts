import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { isFree, parseCatalog, type OpenRouterModel } from './openrouter';

/** The catalog snapshot under VERDICT_HOME: the OpenRouter models format plus where and when it was fetched. */
export interface CatalogSnapshot {
  /** ISO 8601. */
  fetched_at: string;
  /** The URL or absolute path it came from; a background refresh fetches from here again. */
  source: string;
  data: OpenRouterModel[];
}

/** One line of the change log: what changed between two snapshots. Prices are USD-per-token strings as given. */
export interface CatalogChange {
  /** ISO 8601: when the newer snapshot was taken. */
  at: string;
  kind: 'added' | 'removed' | 'price_change' | 'went_free' | 'went_paid';
  id: string;
  old: { prompt: string; completion: string } | null;
  new: { prompt: string; completion: string } | null;
}

/** `<home>/openrouter-catalog.json` */
export function snapshotPath(home: string): string {
  return path.join(home, 'openrouter-catalog.json');
}

/** `<home>/openrouter-catalog.changes.jsonl` */
export function changesPath(home: string): string {
  return path.join(home, 'openrouter-catalog.changes.jsonl');
}

/**
 * Reads the snapshot; null when there is none.
 * @throws Error naming the file when it exists but is not a snapshot (it is then left as it is)
 */
export function readSnapshot(home: string): CatalogSnapshot | null {
  const file = snapshotPath(home);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`);
  }
  const s = v as Partial<CatalogSnapshot>;
  const data = parseCatalog(v, file);
  if (typeof s.fetched_at !== 'string' || typeof s.source !== 'string') throw new Error(`${file}: fetched_at and source must be strings`);
  return { fetched_at: s.fetched_at, source: s.source, data };
}

/** Reads the snapshot, or null when it is missing or unreadable (for callers that must never fail, like a run). */
export function readSnapshotQuietly(home: string): CatalogSnapshot | null {
  try {
    return readSnapshot(home);
  } catch {
    return null;
  }
}

/**
 * The changes from `before` to `after`, sorted by id: added, removed, went_free (paid → both prices 0),
 * went_paid (free → priced), price_change (any other change of prompt or completion price).
 */
export function diffCatalogs(before: readonly OpenRouterModel[], after: readonly OpenRouterModel[], at: string): CatalogChange[] {
  const old = new Map(before.map((m) => [m.id, m]));
  const now = new Map(after.map((m) => [m.id, m]));
  const price = (m: OpenRouterModel) => ({ prompt: m.pricing.prompt, completion: m.pricing.completion });
  const changes: CatalogChange[] = [];
  for (const [id, m] of now) {
    const o = old.get(id);
    if (!o) changes.push({ at, kind: 'added', id, old: null, new: price(m) });
    else if (Number(o.pricing.prompt) !== Number(m.pricing.prompt) || Number(o.pricing.completion) !== Number(m.pricing.completion)) {
      const kind = isFree(m) && !isFree(o) ? 'went_free' : isFree(o) && !isFree(m) ? 'went_paid' : 'price_change';
      changes.push({ at, kind, id, old: price(o), new: price(m) });
    }
  }
  for (const [id, o] of old) if (!now.has(id)) changes.push({ at, kind: 'removed', id, old: price(o), new: null });
  return changes.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Stores `models` as the new snapshot and appends what changed since the previous one to the change log (nothing
 * for the first snapshot: everything would be "added"). The snapshot is replaced atomically.
 * @returns the changes appended
 */
export async function writeSnapshot(home: string, models: OpenRouterModel[], source: string, now: Date): Promise<CatalogChange[]> {
  const previous = readSnapshotQuietly(home);
  const at = now.toISOString();
  const changes = previous ? diffCatalogs(previous.data, models, at) : [];
  fs.mkdirSync(home, { recursive: true });
  if (changes.length) fs.appendFileSync(changesPath(home), changes.map((c) => JSON.stringify(c)).join('\n') + '\n');
  const snap: CatalogSnapshot = { fetched_at: at, source, data: models };
  await writeFileAtomic(snapshotPath(home), JSON.stringify(snap) + '\n');
  return changes;
}

/** The change log, oldest first; lines that are not JSON objects are skipped. */
export function readChanges(home: string): CatalogChange[] {
  let text: string;
  try {
    text = fs.readFileSync(changesPath(home), 'utf8');
  } catch {
    return [];
  }
  const out: CatalogChange[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as CatalogChange;
      if (v && typeof v === 'object' && typeof v.id === 'string') out.push(v);
    } catch {
      // a torn line from a crash while appending; the next refresh writes whole lines again
    }
  }
  return out;
}
