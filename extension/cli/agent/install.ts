import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyEdits, modify, parse, type FormattingOptions, type ParseError } from 'jsonc-parser';
import writeFileAtomic from 'write-file-atomic';
import { InputError, type Io } from '../io';
import { SKILL_MD } from './skill';

/**
 * `verdict install-agent` / `uninstall-agent`: the Verdict skill, the two nudge hooks (nudge.ts) and the MCP server
 * registration, for Claude Code (user level: `~/.claude/skills/verdict/`, `~/.claude/settings.json` `hooks`,
 * `~/.claude.json` `mcpServers`; `--project`: `.claude/skills/verdict/`, `.claude/settings.json`, `.mcp.json` in the
 * current folder) and, at user level when `~/.codex` (or $CODEX_HOME) exists, for Codex (`<codex>/skills/verdict/` and
 * a marked `[mcp_servers.verdict]` block in `<codex>/config.toml`; Codex gets no hooks).
 *
 * Files are edited in place (jsonc-parser edits, so the rest of the text keeps its bytes), never rewritten whole.
 * What was done is kept in `<skill dir>/install.json`: for each file, its text before and after. Uninstall puts a file
 * back byte for byte when it still holds what install wrote; when something else changed it since, only Verdict's
 * entries are taken out (and the containers install created, when they are empty). Installing twice changes nothing.
 */

/** Where one install goes. */
export interface AgentTargets {
  scope: 'user' | 'project';
  /** Claude Code's folder (`~/.claude` or `<project>/.claude`). */
  claudeDir: string;
  /** The file holding the MCP server registration (`~/.claude.json` or `<project>/.mcp.json`). */
  claudeMcpFile: string;
  /** Codex's folder when it is installed (user scope only), else null. */
  codexDir: string | null;
}

/** The targets for a scope: user from $HOME (and $CODEX_HOME), project from `cwd`. */
export function agentTargets(project: boolean, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): AgentTargets {
  if (project) return { scope: 'project', claudeDir: path.join(cwd, '.claude'), claudeMcpFile: path.join(cwd, '.mcp.json'), codexDir: null };
  const home = env.HOME || os.homedir();
  const codex = env.CODEX_HOME || path.join(home, '.codex');
  return {
    scope: 'user',
    claudeDir: path.join(home, '.claude'),
    claudeMcpFile: path.join(home, '.claude.json'),
    codexDir: fs.existsSync(codex) ? codex : null,
  };
}

/** How the hooks and the MCP server start Verdict: this Node and this CLI, absolute. */
export interface VerdictLaunch {
  node: string;
  cli: string;
}

const HOOK_MARK = /\bagent-hook (pre-bash|post-edit)\b/;
const FMT: FormattingOptions = { insertSpaces: true, tabSize: 2, eol: '\n' };
const TOML_BEGIN = '# >>> verdict install-agent (removed by verdict uninstall-agent)';
const TOML_END = '# <<< verdict install-agent';

/** A shell word: single-quoted unless plainly safe. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The hook handlers install-agent adds: event, matcher, command. */
export function hookEntries(l: VerdictLaunch): { event: 'PreToolUse' | 'PostToolUse'; matcher: string; command: string }[] {
  const base = `${shellWord(l.node)} ${shellWord(l.cli)} agent-hook`;
  return [
    { event: 'PreToolUse', matcher: 'Bash', command: `${base} pre-bash` },
    { event: 'PostToolUse', matcher: 'Edit|MultiEdit|Write', command: `${base} post-edit` },
  ];
}

/** The MCP server entry of Claude Code's `mcpServers`. */
export function mcpEntry(l: VerdictLaunch): { type: 'stdio'; command: string; args: string[]; env: Record<string, string> } {
  return { type: 'stdio', command: l.node, args: [l.cli, 'mcp'], env: {} };
}

/** One edited file in install.json: its text before install (null: it did not exist) and after. */
interface FileRecord {
  existed: boolean;
  /** The text before the first install; absent when it changed between installs (no exact restore then). */
  before?: string | null;
  after: string;
  /** JSON paths (dot-joined) install created, removed by uninstall when empty. */
  created: string[];
}

interface InstallRecord {
  version: 1;
  files: Record<string, FileRecord>;
  /** Folders install created, deepest last. */
  dirs: string[];
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new InputError(`${file}: cannot read it: ${(e as Error).message}`);
  }
}

/** A JSON object file's value; a text that is not a JSON object is an InputError naming the file (nothing written). */
function jsonObject(file: string, text: string): Record<string, any> {
  const errors: ParseError[] = [];
  const v = parse(text, errors, { allowTrailingComma: true });
  if (errors.length || !v || typeof v !== 'object' || Array.isArray(v))
    throw new InputError(`${file}: not a JSON object (left as it is; fix it and run again)`);
  return v as Record<string, any>;
}

const edit = (text: string, p: (string | number)[], value: unknown, insert = false) =>
  applyEdits(text, modify(text, p, value, { formattingOptions: FMT, ...(insert ? { isArrayInsertion: true } : {}) }));

/** settings.json with Verdict's hooks added (none twice); `created` gains the containers it made. */
function addHooks(file: string, text: string, l: VerdictLaunch, created: string[]): string {
  for (const h of hookEntries(l)) {
    const v = jsonObject(file, text);
    if (v.hooks !== undefined && (typeof v.hooks !== 'object' || Array.isArray(v.hooks))) throw new InputError(`${file}: "hooks" is not an object`);
    const groups = v.hooks?.[h.event];
    if (groups !== undefined && !Array.isArray(groups)) throw new InputError(`${file}: hooks.${h.event} is not an array`);
    if (groups?.some((g: any) => Array.isArray(g?.hooks) && g.hooks.some((x: any) => typeof x?.command === 'string' && HOOK_MARK.test(x.command)))) continue;
    const group = { matcher: h.matcher, hooks: [{ type: 'command', command: h.command, timeout: 10 }] };
    if (v.hooks === undefined) {
      text = edit(text, ['hooks'], { [h.event]: [group] });
      created.push('hooks', `hooks.${h.event}`);
    } else if (groups === undefined) {
      text = edit(text, ['hooks', h.event], [group]);
      created.push(`hooks.${h.event}`);
    } else text = edit(text, ['hooks', h.event, groups.length], group, true);
  }
  return text;
}

/** settings.json without Verdict's hook handlers (and without the containers install created, once empty). */
function removeHooks(file: string, text: string, created: readonly string[]): string {
  for (;;) {
    const v = jsonObject(file, text);
    let hit: (string | number)[] | null = null;
    for (const [event, groups] of Object.entries(v.hooks && typeof v.hooks === 'object' ? v.hooks : {})) {
      if (!Array.isArray(groups)) continue;
      groups.forEach((g: any, gi) => {
        if (hit || !Array.isArray(g?.hooks)) return;
        const hi = g.hooks.findIndex((x: any) => typeof x?.command === 'string' && HOOK_MARK.test(x.command));
        if (hi >= 0) hit = g.hooks.length === 1 ? ['hooks', event, gi] : ['hooks', event, gi, 'hooks', hi];
      });
      if (hit) break;
    }
    if (!hit) break;
    text = edit(text, hit, undefined);
  }
  for (const p of [...created].reverse()) {
    const v = jsonObject(file, text);
    const parts = p.split('.');
    const node = parts.reduce<any>((o, k) => (o && typeof o === 'object' ? o[k] : undefined), v);
    if (node !== undefined && (Array.isArray(node) ? node.length === 0 : typeof node === 'object' && node && Object.keys(node).length === 0))
      text = edit(text, parts, undefined);
  }
  return text;
}

/** A JSON file with `mcpServers.verdict` set, unless some verdict server is already registered there. */
function addMcp(file: string, text: string, l: VerdictLaunch, created: string[]): string {
  const v = jsonObject(file, text);
  if (v.mcpServers?.verdict !== undefined) return text;
  if (v.mcpServers === undefined) created.push('mcpServers');
  created.push('mcpServers.verdict');
  return edit(text, ['mcpServers', 'verdict'], mcpEntry(l));
}

/** A JSON file without the `mcpServers.verdict` install added (never one the user registered before install). */
function removeMcp(file: string, text: string, created: readonly string[]): string {
  const v = jsonObject(file, text);
  if (v.mcpServers?.verdict !== undefined && created.includes('mcpServers.verdict')) text = edit(text, ['mcpServers', 'verdict'], undefined);
  if (created.includes('mcpServers')) {
    const after = jsonObject(file, text);
    if (after.mcpServers && Object.keys(after.mcpServers).length === 0) text = edit(text, ['mcpServers'], undefined);
  }
  return text;
}

/** config.toml with a marked `[mcp_servers.verdict]` block appended (not when one exists). */
function addCodexMcp(text: string, l: VerdictLaunch): string {
  if (text.includes(TOML_BEGIN) || /^\s*\[mcp_servers\.verdict\]/m.test(text)) return text;
  const q = (s: string) => JSON.stringify(s);
  const block = `${TOML_BEGIN}\n[mcp_servers.verdict]\ncommand = ${q(l.node)}\nargs = [${q(l.cli)}, "mcp"]\n${TOML_END}\n`;
  return text + (text === '' || text.endsWith('\n') ? '' : '\n') + (text === '' ? '' : '\n') + block;
}

function removeCodexMcp(text: string): string {
  const start = text.indexOf(TOML_BEGIN);
  if (start < 0) return text;
  const endMark = text.indexOf(TOML_END, start);
  if (endMark < 0) return text;
  let end = endMark + TOML_END.length;
  if (text[end] === '\n') end++;
  let from = start;
  if (from >= 2 && text.slice(from - 2, from) === '\n\n') from--;
  return text.slice(0, from) + text.slice(end);
}

/** The skill folders install writes (Claude Code's, and Codex's when installed). */
function skillDirs(t: AgentTargets): string[] {
  return [path.join(t.claudeDir, 'skills', 'verdict'), ...(t.codexDir ? [path.join(t.codexDir, 'skills', 'verdict')] : [])];
}

const recordFile = (t: AgentTargets) => path.join(t.claudeDir, 'skills', 'verdict', 'install.json');

function readRecord(t: AgentTargets): InstallRecord | null {
  const text = readText(recordFile(t));
  if (text === null) return null;
  try {
    const r = JSON.parse(text) as InstallRecord;
    return r && r.version === 1 && r.files ? r : null;
  } catch {
    return null;
  }
}

/** Creates `dir` and its missing parents, adding each one it made to `made` (outermost first). */
function mkdirs(dir: string, made: string[]): void {
  const missing: string[] = [];
  for (let d = dir; !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    fs.mkdirSync(d);
    made.push(d);
  }
}

/**
 * Installs (see the module doc). Idempotent. Prints one line per thing done.
 * @throws InputError naming a settings file that is not a JSON object (nothing is written then)
 */
export function installAgent(t: AgentTargets, l: VerdictLaunch, io: Io): void {
  const old = readRecord(t);
  const record: InstallRecord = { version: 1, files: {}, dirs: old?.dirs ?? [] };
  // Compute every file's new text first: a malformed one stops the install before anything is written.
  const plans: { file: string; before: string | null; after: string; created: string[] }[] = [];
  const plan = (file: string, change: (text: string, created: string[]) => string, empty: string) => {
    const before = readText(file);
    const created: string[] = [];
    const after = change(before ?? empty, created);
    plans.push({ file, before, after, created });
  };
  const settings = path.join(t.claudeDir, 'settings.json');
  plan(settings, (text, c) => addHooks(settings, text, l, c), '{}\n');
  plan(t.claudeMcpFile, (text, c) => addMcp(t.claudeMcpFile, text, l, c), '{}\n');
  if (t.codexDir) plan(path.join(t.codexDir, 'config.toml'), (text) => addCodexMcp(text, l), '');

  for (const dir of skillDirs(t)) {
    mkdirs(dir, record.dirs);
    writeFileAtomic.sync(path.join(dir, 'SKILL.md'), SKILL_MD);
    io.out(`skill: ${path.join(dir, 'SKILL.md')}`);
  }
  for (const p of plans) {
    const prev = old?.files[p.file];
    // The exact text to restore survives a second install only when nothing else changed the file in between.
    const keepBefore = prev ? (prev.after === (p.before ?? '') || (p.before === null && !prev.existed) ? prev.before : undefined) : p.before;
    record.files[p.file] = {
      existed: prev ? prev.existed : p.before !== null,
      ...(keepBefore !== undefined ? { before: keepBefore } : {}),
      after: p.after,
      created: [...(prev?.created ?? []), ...p.created],
    };
    if (p.after !== (p.before ?? null)) {
      mkdirs(path.dirname(p.file), record.dirs);
      writeFileAtomic.sync(p.file, p.after);
      io.out(`updated: ${p.file}`);
    } else io.out(`already there: ${p.file}`);
  }
  writeFileAtomic.sync(recordFile(t), JSON.stringify(record, null, 2) + '\n', { mode: 0o600 });
  io.out(
    `installed the Verdict agent (${t.scope} scope): skill, hooks (PreToolUse Bash, PostToolUse Edit|MultiEdit|Write), MCP server "verdict"${t.codexDir ? `; Codex: skill and [mcp_servers.verdict] in ${path.join(t.codexDir, 'config.toml')} (no hooks)` : ''}`,
  );
}

/** Uninstalls (see the module doc): the other skills, hooks and settings are left as they are. Idempotent. */
export function uninstallAgent(t: AgentTargets, io: Io): void {
  const record = readRecord(t);
  const files: [string, FileRecord | undefined][] = [
    [path.join(t.claudeDir, 'settings.json'), undefined],
    [t.claudeMcpFile, undefined],
    ...(t.codexDir ? [[path.join(t.codexDir, 'config.toml'), undefined] as [string, undefined]] : []),
  ];
  for (const f of files) f[1] = record?.files[f[0]];
  for (const [file, rec] of files) {
    const now = readText(file);
    if (now === null) continue;
    if (rec && now === rec.after && rec.before !== undefined) {
      if (rec.before === null) fs.rmSync(file);
      else writeFileAtomic.sync(file, rec.before);
      io.out(`restored: ${file}${rec.before === null ? ' (removed: install created it)' : ''}`);
      continue;
    }
    const created = rec?.created ?? [];
    const next = file.endsWith('.toml')
      ? removeCodexMcp(now)
      : file.endsWith('settings.json')
        ? removeHooks(file, now, created)
        : removeMcp(file, now, created);
    if (next !== now) {
      writeFileAtomic.sync(file, next);
      io.out(`removed Verdict's entries from: ${file}`);
    }
  }
  for (const dir of skillDirs(t)) {
    if (!fs.existsSync(dir)) continue;
    for (const name of ['SKILL.md', 'install.json']) fs.rmSync(path.join(dir, name), { force: true });
    try {
      fs.rmdirSync(dir);
      io.out(`removed skill: ${dir}`);
    } catch {
      io.out(`left ${dir}: it holds files Verdict did not write`);
    }
  }
  for (const dir of [...(record?.dirs ?? [])].reverse()) {
    try {
      fs.rmdirSync(dir);
    } catch {
      // not empty (something else lives there now) or gone: left
    }
  }
  io.out(`uninstalled the Verdict agent (${t.scope} scope)`);
}
