/**
 * A small bash reader for check commands: enough structure (lists, and-or chains, pipelines, commands, words,
 * with offsets) to reason about how a check's exit status is decided, and where. It never throws and never
 * evaluates anything; text it cannot make sense of (half-typed quotes, heredocs) becomes words.
 * The grammar followed is bash's (man bash, SHELL GRAMMAR): a list is and-or chains separated by `;`, `&` or a
 * newline; an and-or chain is pipelines joined by `&&`/`||`, left-associative with equal precedence.
 */
import { parse as shellParse } from 'shell-quote';

/** An operator as written, with its offsets in the check: `&&`, `||`, `;`, `&`, `|`, `|&` or a newline. */
export interface ShellOp {
  op: string;
  start: number;
  end: number;
}

/** A word as written (quotes kept), with its offsets in the check. */
export interface ShellWord {
  raw: string;
  start: number;
  end: number;
}

/**
 * One command of a pipeline. `simple`: words; `group`: `{ ...; }` or `( ... )`, whose inside is `inner`;
 * `compound`: if/for/while/until/case/select, kept opaque (words only), except that an `if` is also read into its
 * clauses (`ifParts`).
 */
export interface ShellCommand {
  kind: 'simple' | 'group' | 'compound';
  words: ShellWord[];
  inner: ShellList[];
  /** For `if ... fi`: its conditions and branches; absent for every other command. */
  ifParts?: ShellIf;
  start: number;
  end: number;
}

/** The parts of `if C1; then B1; elif C2; then B2; else B3; fi`. */
export interface ShellIf {
  /** One per `if`/`elif`, in order: the condition and the `then` branch. */
  clauses: { condition: ShellList[]; body: ShellList[] }[];
  /** The `else` branch; null when there is none (then a false condition makes the `if` exit 0, bash(1)). */
  elseBody: ShellList[] | null;
  /** Whether the closing `fi` was found (false: half-typed, nothing can be concluded). */
  closed: boolean;
}

/** Commands joined by `|`; `negated` for a leading `!`. */
export interface ShellPipeline {
  commands: ShellCommand[];
  /** pipeOps[i] joins commands[i] and commands[i + 1]. */
  pipeOps: ShellOp[];
  negated: boolean;
  start: number;
  end: number;
}

/** An and-or chain (bash's "list" element): pipelines joined by `&&`/`||`. */
export interface ShellList {
  pipelines: ShellPipeline[];
  /** ops[i] joins pipelines[i] and pipelines[i + 1]. */
  ops: ShellOp[];
  /** The `;`, `&` or newline before this chain; null for the first. */
  separatorBefore: ShellOp | null;
  /** The `&` right after this chain: bash runs it in the background and does not wait for its status. */
  background: ShellOp | null;
  start: number;
  end: number;
}

type Token = ({ kind: 'word' } & ShellWord) | ({ kind: 'op' } & ShellOp);

/** Parses a check into its and-or chains, in order. Offsets index into `src`. Never throws. */
export function parseShell(src: string): ShellList[] {
  const parser = new Parser(tokenize(src));
  const lists: ShellList[] = [];
  while (!parser.done()) {
    lists.push(...parser.lists(null));
    if (!parser.done()) parser.skip(); // a stray `)` or `}`: skip it and read on
  }
  return lists;
}

/** The words of a simple command from its command name on (leading `VAR=value` assignments and `command`/`time` dropped). */
export function commandWords(command: ShellCommand): ShellWord[] {
  if (command.kind !== 'simple') return [];
  let i = 0;
  while (i < command.words.length) {
    const raw = command.words[i]?.raw ?? '';
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(raw) || raw === 'command' || raw === 'time') i++;
    else break;
  }
  return command.words.slice(i);
}

/**
 * A word's value after shell quote removal (`'a b'` → `a b`); variables stay as `$NAME`. Same result as shell-quote's
 * `parse` (which it calls for anything but the plainest words); a word shell-quote cannot read (`${}`: "Bad
 * substitution") is returned as written, so a rule judges it as unknown text. Never throws.
 */
export function unquote(raw: string): string {
  if (!/[\\'"$`*?[{~#]/.test(raw)) return raw; // nothing to remove or expand: most words
  // One quoted string and nothing else: shell-quote gives its inside unchanged, for single quotes always, for double
  // quotes when it holds no backslash and no `${` (the only things it rewrites there; `$NAME`, `$(`, `$1` come back as
  // written). shell-quote builds a new RegExp per call (~0.08 ms cold), which was most of lint's time on 1,000 checks.
  if (raw.length >= 2 && raw[0] === "'" && raw.indexOf("'", 1) === raw.length - 1) return raw.slice(1, -1);
  if (raw.length >= 2 && raw[0] === '"' && raw.indexOf('"', 1) === raw.length - 1 && !raw.includes('\\') && !raw.includes('${')) return raw.slice(1, -1);
  const known = unquoted.get(raw);
  if (known !== undefined) return known;
  let value = raw;
  try {
    const parts = shellParse(raw, (name) => `$${name}`);
    if (parts.every((p) => typeof p === 'string')) value = parts.join(' ');
  } catch {
    // shell-quote refuses it (bash would too, at run time): the word as written.
  }
  if (unquoted.size >= UNQUOTED_MAX) unquoted.clear();
  unquoted.set(raw, value);
  return value;
}

/** unquote's results for words that needed shell-quote (each word is read by several rules); bounded, for the editor. */
const unquoted = new Map<string, string>();
const UNQUOTED_MAX = 10_000;

/** Every simple command in `lists`, groups and compound commands' insides included where parsed. */
export function* simpleCommands(lists: ShellList[]): Generator<ShellCommand> {
  for (const list of lists) {
    for (const pipeline of list.pipelines) {
      for (const command of pipeline.commands) {
        if (command.kind === 'simple') yield command;
        else yield* simpleCommands(command.inner);
      }
    }
  }
}

const BLANK = /[ \t\r]/;

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const op = (text: string) => {
    tokens.push({ kind: 'op', op: text, start: i, end: i + text.length });
    i += text.length;
  };
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (BLANK.test(c)) i++;
    else if (c === '\\' && next === '\n') i += 2;
    else if (c === '\n') op('\n');
    else if (c === '#') while (i < src.length && src[i] !== '\n') i++;
    else if (c === '&' && next === '&') op('&&');
    else if (c === '&' && next !== '>') op('&');
    else if (c === '|') op(next === '|' ? '||' : next === '&' ? '|&' : '|');
    else if (c === ';') op(next === ';' ? ';;' : ';');
    else if (c === '(' || c === ')') op(c);
    else {
      const end = scanWord(src, i);
      tokens.push({ kind: 'word', raw: src.slice(i, end), start: i, end });
      i = end;
    }
  }
  return tokens;
}

/** The end of the word starting at `i`: quotes, `$(...)`, `${...}`, backticks and `<(...)` stay inside it. */
function scanWord(src: string, i: number): number {
  if (src[i] === '&') i += 2; // `&>file`
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (BLANK.test(c) || c === '\n' || c === ';' || c === '|' || c === '(' || c === ')') break;
    if (c === '&' && src[i - 1] !== '>' && src[i - 1] !== '<') break;
    if (c === '\\') i += 2;
    else if (c === "'") i = skipPast(src, i + 1, "'");
    else if (c === '"') i = skipDoubleQuoted(src, i + 1);
    else if (c === '`') i = skipPast(src, i + 1, '`');
    else if ((c === '$' || c === '<' || c === '>') && next === '(') i = skipParens(src, i + 1);
    else if (c === '$' && next === '{') i = skipPast(src, i + 2, '}');
    else i++;
  }
  return Math.min(i, src.length);
}

function skipPast(src: string, i: number, close: string): number {
  while (i < src.length && src[i] !== close) i += src[i] === '\\' && close !== "'" ? 2 : 1;
  return i + 1;
}

function skipDoubleQuoted(src: string, i: number): number {
  while (i < src.length && src[i] !== '"') {
    if (src[i] === '\\') i += 2;
    else if (src[i] === '$' && src[i + 1] === '(') i = skipParens(src, i + 1);
    else if (src[i] === '`') i = skipPast(src, i + 1, '`');
    else i++;
  }
  return i + 1;
}

/** `src[i]` is `(`: returns the index after its matching `)`. */
function skipParens(src: string, i: number): number {
  let depth = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
    if (c === '\\') i += 2;
    else if (c === "'") i = skipPast(src, i + 1, "'");
    else if (c === '"') i = skipDoubleQuoted(src, i + 1);
    else i++;
  }
  return i;
}

const NO_WORDS: ReadonlySet<string> = new Set();
/** The reserved words that end a part of an `if`. */
const IF_WORDS: ReadonlySet<string> = new Set(['then', 'elif', 'else', 'fi']);
const COMPOUND_OPENERS = new Set(['if', 'for', 'while', 'until', 'case', 'select']);
const COMPOUND_CLOSERS = new Set(['fi', 'done', 'esac']);
/** Words after which the next word is in command position inside a compound command. */
const LEADS_COMMAND = new Set(['then', 'do', 'else', 'elif', 'if', 'while', 'until', '!', '{']);

class Parser {
  private pos = 0;

  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.pos >= this.tokens.length;
  }

  skip(): void {
    this.pos++;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  /** Whether `t` is one of `ops` (not a type guard: a token that is another operator is still an operator). */
  private isOp(t: Token | undefined, ...ops: string[]): boolean {
    return t?.kind === 'op' && ops.includes(t.op);
  }

  /**
   * And-or chains up to the end, or to `close` (`)` or `}`) or one of the reserved words `until` in command position,
   * which is not consumed.
   */
  lists(close: ')' | '}' | null, until: ReadonlySet<string> = NO_WORDS): ShellList[] {
    const out: ShellList[] = [];
    let separator: ShellOp | null = null;
    for (;;) {
      const t = this.peek();
      if (!t) break;
      if (t.kind === 'op' && this.isOp(t, ';', '\n', '&', ';;')) {
        const previous = out[out.length - 1];
        if (t.op === '&' && previous && separator === null) previous.background = { op: t.op, start: t.start, end: t.end };
        separator = { op: t.op, start: t.start, end: t.end };
        this.pos++;
        continue;
      }
      if ((t.kind === 'op' && t.op === ')') || (t.kind === 'word' && ((t.raw === '}' && close === '}') || until.has(t.raw)))) break;
      if (this.isOp(t, '&&', '||', '|', '|&')) {
        this.pos++; // an operator with nothing before it: half-typed, skip
        continue;
      }
      const list = this.andOr(separator);
      out.push(list);
      separator = null;
    }
    return out;
  }

  private andOr(separatorBefore: ShellOp | null): ShellList {
    const pipelines = [this.pipeline()];
    const ops: ShellOp[] = [];
    while (this.isOp(this.peek(), '&&', '||')) {
      const t = this.peek() as ShellOp;
      this.pos++;
      while (this.isOp(this.peek(), '\n')) this.pos++;
      if (!this.startsCommand()) break;
      ops.push({ op: t.op, start: t.start, end: t.end });
      pipelines.push(this.pipeline());
    }
    const first = pipelines[0] as ShellPipeline;
    const last = pipelines[pipelines.length - 1] as ShellPipeline;
    return { pipelines, ops, separatorBefore, background: null, start: first.start, end: last.end };
  }

  private startsCommand(): boolean {
    const t = this.peek();
    return t !== undefined && (t.kind === 'word' ? t.raw !== '}' : t.op === '(');
  }

  private pipeline(): ShellPipeline {
    const t = this.peek();
    const negated = t?.kind === 'word' && t.raw === '!';
    const start = t?.start ?? 0;
    if (negated) this.pos++;
    const commands = [this.command()];
    const pipeOps: ShellOp[] = [];
    while (this.isOp(this.peek(), '|', '|&')) {
      const p = this.peek() as ShellOp;
      this.pos++;
      while (this.isOp(this.peek(), '\n')) this.pos++;
      if (!this.startsCommand()) break;
      pipeOps.push({ op: p.op, start: p.start, end: p.end });
      commands.push(this.command());
    }
    const end = (commands[commands.length - 1] as ShellCommand).end;
    return { commands, pipeOps, negated, start, end: Math.max(end, start) };
  }

  private command(): ShellCommand {
    const t = this.peek();
    if (!t) return { kind: 'simple', words: [], inner: [], start: 0, end: 0 };
    if (t.kind === 'op' && t.op === '(') return this.group(')');
    if (t.kind === 'word' && t.raw === '{') return this.group('}');
    if (t.kind === 'word' && t.raw === 'if') return this.ifCommand();
    if (t.kind === 'word' && COMPOUND_OPENERS.has(t.raw)) return this.compound();
    const words: ShellWord[] = [];
    while (this.peek()?.kind === 'word') {
      const w = this.peek() as ShellWord;
      words.push({ raw: w.raw, start: w.start, end: w.end });
      this.pos++;
    }
    // `f() { ...; }` and other stray parentheses: not a command we reason about, but never an infinite loop
    if (!words.length) this.pos++;
    return { kind: 'simple', words, inner: [], start: t.start, end: words.length ? (words[words.length - 1] as ShellWord).end : t.end };
  }

  private group(close: ')' | '}'): ShellCommand {
    const open = this.peek() as Token;
    this.pos++;
    const inner = this.lists(close);
    const t = this.peek();
    let end = inner.length ? (inner[inner.length - 1] as ShellList).end : open.end;
    if (t && ((t.kind === 'op' && t.op === close) || (t.kind === 'word' && t.raw === close))) {
      end = t.end;
      this.pos++;
    }
    end = this.trailingWords(end);
    return { kind: 'group', words: [], inner, start: open.start, end };
  }

  /** if/for/while/until/case/select up to its matching fi/done/esac, kept opaque. */
  private compound(): ShellCommand {
    const start = (this.peek() as Token).start;
    const words: ShellWord[] = [];
    let depth = 0;
    let commandPosition = true;
    let end = start;
    while (!this.done()) {
      const t = this.peek() as Token;
      this.pos++;
      end = t.end;
      // Parentheses are not counted: case patterns end in an unmatched `)`.
      if (t.kind === 'op') {
        commandPosition = true;
        continue;
      }
      words.push({ raw: t.raw, start: t.start, end: t.end });
      if (commandPosition && (COMPOUND_OPENERS.has(t.raw) || t.raw === '{')) depth++;
      else if (commandPosition && (COMPOUND_CLOSERS.has(t.raw) || t.raw === '}')) depth--;
      commandPosition = LEADS_COMMAND.has(t.raw);
      if (depth <= 0) break;
    }
    end = this.trailingWords(end);
    return { kind: 'compound', words, inner: [], start, end };
  }

  /** `if C; then B; [elif C; then B;]... [else B;] fi`, read into its clauses (bash(1), Compound Commands). */
  private ifCommand(): ShellCommand {
    const first = this.pos;
    const start = (this.peek() as Token).start;
    const clauses: ShellIf['clauses'] = [];
    let elseBody: ShellList[] | null = null;
    let closed = false;
    let keyword = 'if';
    while (!this.done()) {
      this.pos++; // `if`, `elif` or `else`
      if (keyword === 'else') {
        elseBody = this.lists(null, IF_WORDS);
      } else {
        const condition = this.lists(null, IF_WORDS);
        if (!this.atWord('then')) break;
        this.pos++;
        clauses.push({ condition, body: this.lists(null, IF_WORDS) });
      }
      const next = this.peek();
      if (next?.kind !== 'word' || !IF_WORDS.has(next.raw) || next.raw === 'then' || (keyword === 'else' && next.raw !== 'fi')) break;
      if (next.raw === 'fi') {
        this.pos++;
        closed = true;
        break;
      }
      keyword = next.raw;
    }
    const words: ShellWord[] = [];
    for (const t of this.tokens.slice(first, this.pos)) if (t.kind === 'word') words.push({ raw: t.raw, start: t.start, end: t.end });
    const end = this.trailingWords(this.tokens[this.pos - 1]?.end ?? start);
    return { kind: 'compound', words, inner: [], ifParts: { clauses, elseBody, closed }, start, end };
  }

  private atWord(raw: string): boolean {
    const t = this.peek();
    return t?.kind === 'word' && t.raw === raw;
  }

  /** Redirections after a group or compound command (`} >/dev/null`) belong to it. */
  private trailingWords(end: number): number {
    while (this.peek()?.kind === 'word' && (this.peek() as ShellWord).raw !== '}') {
      end = (this.peek() as ShellWord).end;
      this.pos++;
    }
    return end;
  }
}
