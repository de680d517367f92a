// Recognising a Ringer manifest by its shape. Ringer names its manifests `manifest.json`, a name browser extensions
// and web app manifests use too, so the name alone never makes a file a Verdict manifest (the editor would lint a
// stranger's file): the content must have Ringer's shape as well.
import { parse, type ParseError } from 'jsonc-parser';

/**
 * True when `text` is a JSON(C) object with a non-empty `tasks` array whose every entry is an object with a string
 * `spec` and a string `check` (the two fields every Ringer and Verdict task has), and without `manifest_version` (a
 * browser extension's manifest). Reads at most the first 1 MB (bytes of UTF-16 text). Never throws.
 */
export function looksLikeRingerManifest(text: string): boolean {
  if (text.length > 1_000_000) return false;
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true });
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const o = value as Record<string, unknown>;
  if ('manifest_version' in o || !Array.isArray(o.tasks) || o.tasks.length === 0) return false;
  return o.tasks.every(
    (t) =>
      typeof t === 'object' &&
      t !== null &&
      typeof (t as Record<string, unknown>).spec === 'string' &&
      typeof (t as Record<string, unknown>).check === 'string',
  );
}
