import fs from 'node:fs';
import { CatalogShapeError, isFree, isTextToText, microUsdPerToken, type OpenRouterModel } from '../core/catalog/openrouter';
import { fetchCatalog, OPENROUTER_MODELS_URL, refreshCatalog } from '../core/catalog/refresh';
import { readChanges, readSnapshot } from '../core/catalog/snapshot';
import { InputError, type Io } from './io';

/** Flags of `verdict catalog`. */
export interface CatalogFlags {
  home: string;
  refresh: boolean;
  /** Where --refresh fetches: an http(s) URL or a file (default: the snapshot's source, else OpenRouter). */
  source?: string;
  /** Show this OpenRouter-format file instead of the snapshot (the snapshot is not touched). */
  file?: string;
  free: boolean;
  changes: boolean;
  json: boolean;
}

/**
 * `verdict catalog`: refreshes (--refresh) and shows the model catalog snapshot, or its change log (--changes).
 * A source of the wrong shape is refused (exit 2) and the previous snapshot kept. Returns the exit code.
 */
export async function catalogCommand(f: CatalogFlags, io: Io): Promise<number> {
  try {
    if (f.changes) {
      const changes = readChanges(f.home);
      if (f.json) io.out(JSON.stringify(changes, null, 2));
      else if (!changes.length) io.out('no catalog changes recorded yet (a change log starts with the second refresh)');
      else
        for (const c of changes)
          io.out(`${c.at}  ${c.kind.padEnd(12)} ${c.id}${c.old && c.new ? `  ${c.old.prompt}/${c.old.completion} → ${c.new.prompt}/${c.new.completion}` : ''}`);
      return 0;
    }
    let models: OpenRouterModel[];
    let header: string;
    if (f.file) {
      if (!fs.existsSync(f.file)) throw new InputError(`--file ${f.file}: no such file`);
      models = await fetchCatalog(f.file);
      header = `${models.length} model(s) in ${f.file}`;
    } else {
      if (f.refresh) {
        const source = f.source ?? readSnapshot(f.home)?.source ?? OPENROUTER_MODELS_URL;
        const r = await refreshCatalog(f.home, source);
        io.err(`catalog refreshed from ${r.source}: ${r.models} model(s), ${r.changes.length} change(s)`);
      }
      const snap = readSnapshot(f.home);
      if (!snap) {
        io.err('no catalog snapshot yet: run `verdict catalog --refresh [--source URL|PATH]`');
        return 1;
      }
      models = snap.data;
      header = `${models.length} model(s), fetched ${snap.fetched_at} from ${snap.source}`;
    }
    const shown = f.free ? models.filter(isFree) : models;
    if (f.json) {
      io.out(JSON.stringify(shown, null, 2));
      return 0;
    }
    io.out(header);
    for (const m of shown) {
      const p = microUsdPerToken(m.pricing.prompt);
      const c = microUsdPerToken(m.pricing.completion);
      const price = isFree(m) ? 'free' : `$${p ?? '?'}/$${c ?? '?'} per Mtok`;
      io.out(
        `${m.id.padEnd(48)} ${String(m.context_length ?? '-').padStart(8)}  ${isTextToText(m) ? 'text→text' : (m.architecture?.modality ?? '?')}  ${price}`,
      );
    }
    return 0;
  } catch (e) {
    if (e instanceof CatalogShapeError) throw new InputError(`${e.message}; the previous snapshot is kept`);
    if (e instanceof InputError) throw e;
    throw new InputError(`catalog: ${(e as Error).message}; the previous snapshot is kept`);
  }
}
