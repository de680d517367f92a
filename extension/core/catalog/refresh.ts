import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import { CatalogShapeError, parseCatalog, type OpenRouterModel } from './openrouter';
import { readSnapshotQuietly, snapshotPath, writeSnapshot, type CatalogChange } from './snapshot';

/** OpenRouter's public models endpoint: the default source of `verdict catalog --refresh`. */
export const OPENROUTER_MODELS_URL = 'https://openrouter.ai/api/v1/models';

/** A background refresh happens at most once in this long, ms (at most once in 24 h, so a catalog fetch never slows every command). */
export const REFRESH_INTERVAL_MS = 24 * 60 * 60 * 1000;

/** Time allowed for one fetch, ms. */
const FETCH_TIMEOUT_MS = 20_000;

/**
 * Reads a catalog from an http(s) URL or a file path and checks its shape.
 * @throws CatalogShapeError for the wrong shape (naming source and field); Error for an unreachable source, an
 *   HTTP status other than 200, or text that is not JSON
 */
export async function fetchCatalog(source: string, signal?: AbortSignal): Promise<OpenRouterModel[]> {
  let text: string;
  if (/^https?:\/\//.test(source)) {
    const timeout = AbortSignal.timeout(FETCH_TIMEOUT_MS);
    const res = await fetch(source, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout, headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`${source}: HTTP ${res.status} ${res.statusText}`);
    text = await res.text();
  } else {
    text = fs.readFileSync(source, 'utf8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new CatalogShapeError(`${source}: not JSON (${(e as Error).message})`);
  }
  return parseCatalog(value, source);
}

/** What a refresh did. */
export interface RefreshResult {
  models: number;
  changes: CatalogChange[];
  source: string;
}

/**
 * Fetches the catalog from `source` (URL or path; relative paths resolve against the cwd) and stores it as the new
 * snapshot with its change log, under a lock so two refreshes never interleave. On any error the previous
 * snapshot is kept as it was.
 * @param signal aborts the fetch (nothing is written then)
 * @throws like {@link fetchCatalog}
 */
export async function refreshCatalog(home: string, source: string, now = new Date(), signal?: AbortSignal): Promise<RefreshResult> {
  const src = /^https?:\/\//.test(source) ? source : path.resolve(source);
  const models = await fetchCatalog(src, signal);
  if (signal?.aborted) throw new Error('the refresh was stopped');
  fs.mkdirSync(home, { recursive: true });
  const changes = await withLock(snapshotPath(home), () => writeSnapshot(home, models, src, now));
  return { models: models.length, changes, source: src };
}

/**
 * The background refresh a run starts: only when a snapshot exists (someone ran `verdict catalog --refresh` once,
 * which also names the source) and it is older than 24 h. Never throws and never delays the run: the run aborts
 * `signal` when it ends; the promise resolves to what happened, for logs and tests.
 */
export async function refreshInBackground(
  home: string,
  signal?: AbortSignal,
  now = new Date(),
): Promise<'fresh' | 'no-snapshot' | 'refreshed' | `failed: ${string}`> {
  const snap = readSnapshotQuietly(home);
  if (!snap) return 'no-snapshot';
  if (now.getTime() - Date.parse(snap.fetched_at) < REFRESH_INTERVAL_MS) return 'fresh';
  try {
    await refreshCatalog(home, snap.source, now, signal);
    return 'refreshed';
  } catch (e) {
    return `failed: ${(e as Error).message}`;
  }
}
