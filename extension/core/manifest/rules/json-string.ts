import type { Node } from 'jsonc-parser';
import type { LineIndex, SourceRange } from '../positions';

/**
 * A JSON string value together with the way back from its decoded text to the raw token: a problem found at
 * decoded offsets (say `grep -q` inside a check) gets the exact range of those characters in the file, escapes
 * included. Every JSON escape (`\n`, `\"`, `\u00e9`, each half of a surrogate pair) decodes to one UTF-16 code
 * unit, so walking the token gives each decoded unit its raw offset.
 */
export class JsonString {
  /** The decoded value, as jsonc-parser gives it. */
  readonly value: string;

  /** @param node a jsonc-parser node of type `string`; `text` the whole manifest text it was parsed from. */
  constructor(
    readonly node: Node,
    private readonly text: string,
    private readonly index: LineIndex,
  ) {
    this.value = String(node.value);
  }

  /** The range of the whole value, quotes included. */
  get range(): SourceRange {
    return this.index.range(this.node.offset, this.node.length);
  }

  /**
   * The range of decoded characters [start, end) in the file. Falls back to the whole value when the token does
   * not decode to the value (an invalid escape, which the parser already reports).
   */
  rangeOf(start: number, end: number): SourceRange {
    const from = this.rawOffset(start, end);
    return from ? this.index.range(from[0], from[1] - from[0]) : this.range;
  }

  /** Absolute text offsets where decoded units `start` and `end` begin, found by walking the token (no allocation per unit). */
  private rawOffset(start: number, end: number): [number, number] | null {
    const text = this.text;
    const value = this.value;
    const close = this.node.offset + this.node.length - 1;
    if (this.node.type !== 'string' || text[this.node.offset] !== '"' || text[close] !== '"' || start > end || end > value.length) return null;
    let from = -1;
    let i = this.node.offset + 1;
    for (let k = 0; k < end; k++) {
      if (k === start) from = i;
      if (i >= close) return null;
      let unit: string;
      if (text[i] !== '\\') {
        unit = text[i] as string;
        i += 1;
      } else if (text[i + 1] === 'u') {
        unit = String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
        i += 6;
      } else {
        const c = text[i + 1] ?? '';
        unit = ESCAPES[c] ?? c;
        i += 2;
      }
      if (value[k] !== unit) return null;
    }
    return [from < 0 ? i : from, i];
  }
}

/** Escapes `text` for use inside a JSON string token (no surrounding quotes). */
export function jsonEscape(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };
