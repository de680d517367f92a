/**
 * The manifest as every caller above the run reads it: the loader and lint (manifest/load.ts, manifest/lint.ts) with
 * every workflow's section (run/workflows/index.ts WORKFLOW_SECTIONS) handed in. The manifest layer sits below the
 * workflows and never imports them (docs/architecture.md "Layers and import rules"), so it is told them here; code of
 * the run itself that the workflow table reaches (the frozen manifest's readers, a planner's generated file) is handed
 * the sections by its caller instead, since importing this module from there would close an import circle.
 * Each function is its manifest-layer namesake with `sections` filled in; same shapes, same errors.
 */
import { loadManifest as loadWith, parseManifest as parseWith, type ParsedText, type ParseOptions, type ParseResult } from '../manifest/load';
import { lintManifestFile as lintFileWith, lintManifestText as lintTextWith, lintParsed as lintParsedWith, type LintOptions } from '../manifest/lint';
import type { Finding } from '../manifest/findings';
import type { Manifest, ManifestProblem } from '../manifest/types';
import { WORKFLOW_SECTIONS } from './workflows';

/** ParseOptions without `sections`: the workflow table's are used. */
export type ManifestParseOptions = Omit<ParseOptions, 'sections'>;
/** LintOptions without `sections`: the workflow table's are used. */
export type ManifestLintOptions = Omit<LintOptions, 'sections'>;

/** manifest/load.ts parseManifest with every workflow's section. Never throws. */
export function parseManifest(text: string, file: string, options: ManifestParseOptions = {}): ParseResult {
  return parseWith(text, file, { ...options, sections: WORKFLOW_SECTIONS });
}

/**
 * manifest/load.ts loadManifest with every workflow's section.
 * @throws ManifestError listing every error with file:line:column and field path (an unreadable file is one error)
 */
export function loadManifest(file: string, options: ManifestParseOptions = {}): { manifest: Manifest; warnings: ManifestProblem[]; parsed: ParsedText } {
  return loadWith(file, { ...options, sections: WORKFLOW_SECTIONS });
}

/** manifest/lint.ts lintManifestText with every workflow's section (and its lint rules). Never throws for any text. */
export function lintManifestText(text: string, file: string, ctx: ManifestLintOptions): Promise<Finding[]> {
  return lintTextWith(text, file, { ...ctx, sections: WORKFLOW_SECTIONS });
}

/** manifest/lint.ts lintParsed with every workflow's section: lints what one parse (loadManifest's `parsed`) left. */
export function lintParsed(parsed: ParsedText, ctx: ManifestLintOptions): Promise<Finding[]> {
  return lintParsedWith(parsed, { ...ctx, sections: WORKFLOW_SECTIONS });
}

/** manifest/lint.ts lintManifestFile with every workflow's section; an unreadable file is one `invalid-manifest` error. */
export function lintManifestFile(file: string, ctx: ManifestLintOptions): Promise<Finding[]> {
  return lintFileWith(file, { ...ctx, sections: WORKFLOW_SECTIONS });
}
