import path from 'node:path';
import * as vscode from 'vscode';
import type { EngineSpec } from '../../engines/types';
import type { Finding } from '../core/manifest/findings';
import { looksLikeRingerManifest } from '../core/manifest/sniff';
import { isListedManifest } from './manifest-files';
import { readSettings } from './settings';
import { lintManifestText } from '../core/run/manifest';

/** Debounce between a keystroke and the next lint, ms. */
const LINT_DEBOUNCE_MS = 300;

/**
 * A manifest: `*.swarm.json` / `*.swarm.jsonc`; a JSON document listed in `verdict.manifestFiles` (or added there by
 * "Treat as a Verdict Manifest"); a `manifest.json` with Ringer's shape; or a JSON document whose `$schema` names the
 * manifest schema.
 */
export function isManifestDocument(doc: vscode.TextDocument): boolean {
  if (doc.uri.scheme !== 'file' && doc.uri.scheme !== 'untitled') return false;
  if (/\.swarm\.jsonc?$/.test(doc.fileName)) return true;
  if (doc.languageId !== 'json' && doc.languageId !== 'jsonc') return false;
  if (isListedManifest(doc.uri)) return true;
  // Ringer's manifests are named manifest.json: recognised by their shape, never by the name alone (manifest-files.ts).
  if (path.basename(doc.fileName) === 'manifest.json' && looksLikeRingerManifest(doc.getText())) return true;
  return /"\$schema"\s*:\s*"[^"]*manifest\.schema\.json"/.test(doc.getText(new vscode.Range(0, 0, 50, 0)));
}

const severity: Record<Finding['severity'], vscode.DiagnosticSeverity> = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  info: vscode.DiagnosticSeverity.Information,
};

/**
 * Lints manifests on open and on change (debounced) into the "verdict" DiagnosticCollection (the Problems panel),
 * and offers the linter's quick fixes as code actions. Lint works in untrusted workspaces too, but there it starts
 * no process (no git: the .gitignore check is skipped with an info finding); every manifest is linted again when the
 * workspace becomes trusted.
 */
export class ManifestDiagnostics implements vscode.Disposable, vscode.CodeActionProvider {
  static readonly providedCodeActionKinds = [vscode.CodeActionKind.QuickFix];
  private readonly collection = vscode.languages.createDiagnosticCollection('verdict');
  private readonly findings = new Map<string, Finding[]>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly versions = new Map<string, number>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly engines: () => ReadonlyMap<string, EngineSpec>,
    private readonly allowFullAccess: () => boolean,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.collection,
      vscode.workspace.onDidOpenTextDocument((d) => this.schedule(d, 0)),
      vscode.workspace.onDidChangeTextDocument((e) => this.schedule(e.document, LINT_DEBOUNCE_MS)),
      vscode.workspace.onDidCloseTextDocument((d) => this.forget(d.uri)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refreshAll()),
      vscode.languages.registerCodeActionsProvider([{ language: 'json' }, { language: 'jsonc' }], this, {
        providedCodeActionKinds: ManifestDiagnostics.providedCodeActionKinds,
      }),
    );
    for (const doc of vscode.workspace.textDocuments) this.schedule(doc, 0);
  }

  /** Lints every open manifest again (after a settings change, or when the workspace becomes trusted). */
  refreshAll(): void {
    for (const doc of vscode.workspace.textDocuments) this.schedule(doc, 0);
  }

  /** The findings last computed for a document, for tests and the API. */
  findingsFor(uri: vscode.Uri): Finding[] {
    return this.findings.get(uri.toString()) ?? [];
  }

  /** Lints one document now and publishes its diagnostics; resolves with the findings. */
  async lintNow(doc: vscode.TextDocument): Promise<Finding[]> {
    const key = doc.uri.toString();
    const version = doc.version;
    this.versions.set(key, version);
    let findings: Finding[];
    try {
      findings = await lintManifestText(doc.getText(), doc.uri.fsPath, {
        engines: this.engines(),
        allowFullAccess: this.allowFullAccess(),
        trusted: vscode.workspace.isTrusted,
        pathEnv: process.env.PATH ?? '',
        // The config's route, as a run loads the manifest: an engine "auto" manifest without its own route needs it.
        route: readSettings().route,
      });
    } catch (e) {
      this.log.error(`lint of ${doc.uri.fsPath} failed: ${(e as Error).stack ?? e}`);
      return [];
    }
    if (this.versions.get(key) !== version || doc.isClosed) return findings; // a newer edit is being linted
    this.findings.set(key, findings);
    this.collection.set(
      doc.uri,
      findings.map((f) => toDiagnostic(doc, f)),
    );
    return findings;
  }

  provideCodeActions(doc: vscode.TextDocument, range: vscode.Range | vscode.Selection): vscode.CodeAction[] {
    const actions: vscode.CodeAction[] = [];
    for (const f of this.findingsFor(doc.uri)) {
      if (!f.fix || !f.range) continue;
      const where = offsetRange(doc, f.range.offset, f.range.length);
      if (!where.intersection(range)) continue;
      const action = new vscode.CodeAction(f.fix.title, vscode.CodeActionKind.QuickFix);
      action.edit = new vscode.WorkspaceEdit();
      action.edit.replace(doc.uri, offsetRange(doc, f.fix.range.offset, f.fix.range.length), f.fix.newText);
      action.diagnostics = [toDiagnostic(doc, f)];
      action.isPreferred = true;
      actions.push(action);
    }
    return actions;
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    for (const d of this.disposables) d.dispose();
  }

  private schedule(doc: vscode.TextDocument, delayMs: number): void {
    if (!isManifestDocument(doc)) return;
    const key = doc.uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void this.lintNow(doc);
      }, delayMs),
    );
  }

  private forget(uri: vscode.Uri): void {
    const key = uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    this.findings.delete(key);
    this.collection.delete(uri);
  }
}

function offsetRange(doc: vscode.TextDocument, offset: number, length: number): vscode.Range {
  return new vscode.Range(doc.positionAt(offset), doc.positionAt(offset + length));
}

function toDiagnostic(doc: vscode.TextDocument, f: Finding): vscode.Diagnostic {
  const range = f.range ? offsetRange(doc, f.range.offset, f.range.length) : new vscode.Range(0, 0, 0, 1);
  const d = new vscode.Diagnostic(range, f.message, severity[f.severity]);
  d.source = 'verdict';
  d.code = f.rule;
  return d;
}
