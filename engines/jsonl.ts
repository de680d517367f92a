/**
 * Reading structured events out of a raw worker log. The log is stdout and stderr interleaved, so JSON event
 * lines sit between plain-text lines (warnings, stack traces) and a log tail may start in the middle of a line.
 */
import { emptyUsage, type UsageReport } from './types';

/** One JSON object that a CLI printed on one line of its log. */
export type LogEvent = Record<string, unknown>;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseObjectLine(line: string): LogEvent | null {
  const text = line.trim();
  if (!text.startsWith('{')) return null;
  return parseObject(text);
}

function parseObject(text: string): LogEvent | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * The event that ends a line which is not one itself: text written without a newline just before the CLI's event (a
 * partial line of stderr, or of a tool writing into the engine's output) glues the two, and the event was skipped, so a
 * forged final event written earlier was the only one read. The event is the line's last `{…}`: its opening brace is
 * found by one scan from the line's end, matching braces and brackets outside strings (eventStart), and only that
 * suffix is parsed — once, whatever the worker wrote before it, and whatever key the CLI prints first (Claude Code's
 * result starts `{"duration_api_ms":…`). null when the line does not end with one.
 */
function gluedEvent(line: string): LogEvent | null {
  const text = line.trimEnd();
  const from = eventStart(text);
  return from > 0 ? parseObject(text.slice(from)) : null;
}

/**
 * Where the JSON object that ends `text` opens: scanning from the end, brackets are counted outside strings (a `"`
 * preceded by an odd number of backslashes is inside one) until the closing `}` is matched. -1 when `text` does not end
 * with `}` or nothing matches. Linear in the length of what it scans; the result still has to parse.
 */
function eventStart(text: string): number {
  if (!text.endsWith('}')) return -1;
  let depth = 0;
  let inString = false;
  for (let i = text.length - 1; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let slashes = 0;
      while (i - 1 - slashes >= 0 && text.charCodeAt(i - 1 - slashes) === 92 /* \ */) slashes++;
      if (slashes % 2 === 0) inString = !inString;
    } else if (!inString) {
      if (c === 125 /* } */ || c === 93 /* ] */) depth++;
      else if (c === 123 /* { */ || c === 91 /* [ */) {
        depth--;
        if (depth === 0) return c === 123 ? i : -1;
      }
    }
  }
  return -1;
}

/**
 * The JSON objects in a log, in order: one per line that parses as a JSON object, or that ends with one glued to text
 * written before it without a newline (gluedEvent: a worker's partial line must not hide the engine's real final event,
 * leaving a forged one the only one read); other lines are skipped.
 */
export function jsonEvents(log: string): LogEvent[] {
  const events: LogEvent[] = [];
  for (const line of log.split(/\r?\n/)) {
    const event = parseObjectLine(line) ?? gluedEvent(line);
    if (event) events.push(event);
  }
  return events;
}

/**
 * The `type` values of the log's JSON events that are not in `known`, in order of first appearance, at most `max`
 * (default 5); a type that is not a short plain name (letters, digits, `_ . -`, up to 40) is given as `(odd type)`, as
 * the log may hold lines the worker wrote. Events without a string `type` are skipped. Never throws.
 */
export function unknownEventTypes(log: string, known: readonly string[], max = 5): string[] {
  const found = new Set<string>();
  for (const event of jsonEvents(log)) {
    if (typeof event.type !== 'string' || known.includes(event.type)) continue;
    found.add(/^[\w.-]{1,40}$/.test(event.type) ? event.type : '(odd type)');
    if (found.size >= max) break;
  }
  return [...found];
}

/**
 * The events a one-turn CLI's usage and answer are read from (codex exec, claude -p, gemini -p print exactly one final
 * event): every event up to and including its final event (`isFinal`), all of them when it printed none (cut off), or
 * null when the log holds more than one. A second final event is a line forged into the log (a tool the worker ran can
 * write to its engine's stdout through /proc/<pid>/fd/1): one written after the real one, in the moment before the
 * engine exits, would otherwise be read as the engine's last word (its usage, or a reviewer's answer). Lines after the
 * final event are never read, for the same reason.
 */
export function upToSoleFinal(events: LogEvent[], isFinal: (event: LogEvent) => boolean): LogEvent[] | null {
  const finals = events.filter(isFinal).length;
  if (finals > 1) return null;
  const at = events.findIndex(isFinal);
  return at < 0 ? events : events.slice(0, at + 1);
}

/** The report of a log that holds more than one final event (see upToSoleFinal): nothing known, an error. */
export function forgedFinalReport(kind: string): UsageReport {
  return {
    ...emptyUsage(),
    finalStatus: 'error',
    finalError: `the log holds more than one ${kind} event (a one-turn CLI prints one): the worker wrote into its engine's output, so none is believed`,
  };
}

/** The non-empty lines of a log that are not JSON objects (what the CLI printed as plain text, mostly stderr). */
export function plainLines(log: string): string[] {
  return log.split(/\r?\n/).filter((line) => line.trim() !== '' && parseObjectLine(line) === null);
}

/** The value found by following object keys from `value`; undefined when any step is missing or not an object. */
export function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

/** The finite number at `path`, or null when absent or not a number (a missing count is unknown, not 0). */
export function numberAt(value: unknown, ...path: string[]): number | null {
  const found = at(value, ...path);
  return typeof found === 'number' && Number.isFinite(found) ? found : null;
}

/**
 * The token count at `path`: a non-negative safe integer, or null when absent or anything else. A negative, fractional
 * or huge figure is no count a CLI prints; it can only be a line forged into the log by what the worker ran (such a
 * figure in an eval row would fail its schema, and the row, the attempt's only record, would not be written).
 */
export function countAt(value: unknown, ...path: string[]): number | null {
  const found = numberAt(value, ...path);
  return found !== null && Number.isSafeInteger(found) && found >= 0 ? found : null;
}

/** The amount (a cost in USD) at `path`: a finite number >= 0, or null when absent or negative (see countAt). */
export function amountAt(value: unknown, ...path: string[]): number | null {
  const found = numberAt(value, ...path);
  return found !== null && found >= 0 ? found : null;
}

/** The non-empty string at `path`, or null. */
export function stringAt(value: unknown, ...path: string[]): string | null {
  const found = at(value, ...path);
  return typeof found === 'string' && found !== '' ? found : null;
}

/** The object at `path`, or null. */
export function objectAt(value: unknown, ...path: string[]): Record<string, unknown> | null {
  const found = at(value, ...path);
  return isObject(found) ? found : null;
}
