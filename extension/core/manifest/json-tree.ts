/**
 * Manifest text (JSONC: comments and trailing commas allowed) read into what the loader and the linter both use,
 * in one pass: jsonc-parser's tree, the value, and the properties that appear twice in an object.
 *
 * jsonc-parser's parseTree builds the tree through its visitor and scanner (~50 ms of CPU cold for a 1,000-task
 * manifest, plus the garbage it leaves), and the value and the repeated properties were then each a further walk over
 * it (issue 15 item 4). The reader here builds the same Node objects parseTree makes (type, offset, length,
 * colonOffset, parent, children, value) and the value beside them, in one pass, for text that parseTree reads without
 * an error. At the first thing it does not read plainly (any syntax error, and any character parseTree's scanner
 * would report) it gives up, and jsonc-parser itself reads the text: errors and their positions are always
 * jsonc-parser's. test/unit/json-tree.unit.test.ts holds the two to the same trees and values, including on mutated
 * text.
 */
import { getNodePath, getNodeValue, parseTree, type JSONPath, type Node, type ParseError } from 'jsonc-parser';

/** A property name that appears again in the same object (JSON leaves this undefined; the later value wins). */
export interface RepeatedProperty {
  /** The later occurrence's name node. */
  node: Node;
  /** Path of the property: the object's path and the name. */
  path: JSONPath;
  name: string;
}

/** What {@link parseJsonc} read. */
export interface JsoncRead {
  /** The tree (as jsonc-parser's parseTree makes it); undefined for empty text or text that is only comments. */
  root: Node | undefined;
  /** jsonc-parser's errors (offset and length in the text); when any, `value` is undefined and `repeated` empty. */
  errors: ParseError[];
  /**
   * The value as jsonc-parser's getNodeValue makes it from the tree: objects without a prototype (so a property named
   * `__proto__` is an ordinary property), a repeated property's later value. Undefined when there are errors.
   */
  value: unknown;
  /** Every repeated property, in text order. */
  repeated: RepeatedProperty[];
}

/**
 * Reads JSONC text as jsonc-parser does with `allowTrailingComma: true` and comments allowed. Never throws.
 * @param text the whole text
 */
export function parseJsonc(text: string): JsoncRead {
  const fast = readPlain(text);
  if (fast) return fast;
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length || !root) return { root, errors, value: undefined, repeated: [] };
  return { root, errors, value: getNodeValue(root), repeated: repeatedProperties(root) };
}

/** A Node while the reader builds it (jsonc-parser's Node is read-only). */
type Building = { -readonly [K in keyof Node]: Node[K] };

/** Thrown inside the reader when the text is not plain: the caller falls back to jsonc-parser. */
const NOT_PLAIN = new Error('not plain JSONC');

/**
 * The one-pass reader; null when the text has anything jsonc-parser would report (or that this reader leaves to it:
 * empty text, nesting deep enough to exhaust the stack).
 */
export function readPlain(text: string): JsoncRead | null {
  const reader = new PlainReader(text);
  try {
    reader.skipTrivia();
    if (reader.pos >= text.length) return null;
    const root = reader.readValue(undefined);
    reader.skipTrivia();
    if (reader.pos !== text.length) return null;
    // parseTree's root has no parent property at all (it deletes the artificial one).
    delete (root as { parent?: Node }).parent;
    const repeated = reader.repeated.map((node) => {
      const object = node.parent?.parent as Node;
      const name = node.value as string;
      return { node, path: [...getNodePath(object), name], name };
    });
    return { root, errors: [], value: reader.value, repeated };
  } catch (e) {
    if (e === NOT_PLAIN || e instanceof RangeError) return null;
    throw e;
  }
}

class PlainReader {
  pos = 0;
  /** The value of the node readValue returned last. */
  value: unknown = undefined;
  /** The decoded text of the string token scanString read last. */
  private str = '';
  /** Name nodes of repeated properties, in text order. */
  readonly repeated: Node[] = [];

  constructor(private readonly text: string) {}

  /** Skips blanks (space, tab, CR, LF: jsonc-parser's only ones) and comments. */
  skipTrivia(): void {
    const t = this.text;
    const n = t.length;
    let i = this.pos;
    while (i < n) {
      const c = t.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) {
        BLANKS.lastIndex = i + 1;
        BLANKS.test(t); // native: a pretty-printed manifest is a third blanks
        i = BLANKS.lastIndex;
      } else if (c === 47) {
        const d = t.charCodeAt(i + 1);
        if (d === 47) {
          i += 2;
          while (i < n) {
            const e = t.charCodeAt(i);
            if (e === 10 || e === 13) break;
            i++;
          }
        } else if (d === 42) {
          const close = t.indexOf('*/', i + 2);
          if (close < 0) throw NOT_PLAIN;
          i = close + 2;
        } else {
          throw NOT_PLAIN;
        }
      } else {
        break;
      }
    }
    this.pos = i;
  }

  /** Reads the value at `pos` (no trivia before it) into a node appended to `parent`'s children; sets `value`. */
  readValue(parent: Node | undefined): Node {
    const t = this.text;
    const start = this.pos;
    const c = t.charCodeAt(start);
    let node: Node;
    if (c === 123) {
      node = this.readObject(parent);
    } else if (c === 91) {
      node = this.readArray(parent);
    } else if (c === 34) {
      const end = this.scanString(start);
      node = { type: 'string', offset: start, length: end - start, parent, value: this.str } as Node;
      this.value = this.str;
      this.pos = end;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      const end = this.scanNumber(start);
      const value = Number(t.slice(start, end));
      node = { type: 'number', offset: start, length: end - start, parent, value } as Node;
      this.value = value;
      this.pos = end;
    } else {
      const literal = c === 116 && t.startsWith('true', start) ? true : c === 102 && t.startsWith('false', start) ? false : c === 110 && t.startsWith('null', start) ? null : undefined;
      if (literal === undefined) throw NOT_PLAIN;
      // `truex` is one word to jsonc-parser: the caller's check of what follows a value gives up on the `x`.
      const end = start + (literal === null || literal ? 4 : 5);
      node = { type: literal === null ? 'null' : 'boolean', offset: start, length: end - start, parent, value: literal } as Node;
      this.value = literal;
      this.pos = end;
    }
    if (parent && parent.type === 'array') (parent.children as Node[]).push(node);
    return node;
  }

  private readObject(parent: Node | undefined): Node {
    const t = this.text;
    const start = this.pos;
    const node: Building = { type: 'object', offset: start, length: -1, parent, children: [] };
    const children = node.children as Node[];
    const object = Object.create(null) as Record<string, unknown>;
    this.pos++;
    this.skipTrivia();
    let c = t.charCodeAt(this.pos);
    while (c !== 125) {
      if (c !== 34) throw NOT_PLAIN;
      const nameStart = this.pos;
      const nameEnd = this.scanString(nameStart);
      const name = this.str;
      const property: Building = { type: 'property', offset: nameStart, length: -1, parent: node, children: undefined, colonOffset: -1 };
      const nameNode = { type: 'string', value: name, offset: nameStart, length: nameEnd - nameStart, parent: property } as Node;
      property.children = [nameNode, nameNode];
      children.push(property);
      if (name in object) this.repeated.push(nameNode);
      this.pos = nameEnd;
      this.skipTrivia();
      if (t.charCodeAt(this.pos) !== 58) throw NOT_PLAIN;
      property.colonOffset = this.pos;
      this.pos++;
      this.skipTrivia();
      const valueNode = this.readValue(property);
      (property.children as Node[])[1] = valueNode;
      object[name] = this.value;
      property.length = valueNode.offset + valueNode.length - nameStart;
      this.skipTrivia();
      c = t.charCodeAt(this.pos);
      if (c === 44) {
        this.pos++;
        this.skipTrivia();
        c = t.charCodeAt(this.pos);
      } else if (c !== 125) {
        throw NOT_PLAIN;
      }
    }
    node.length = this.pos + 1 - start;
    this.pos++;
    this.value = object;
    return node;
  }

  private readArray(parent: Node | undefined): Node {
    const t = this.text;
    const start = this.pos;
    const node: Building = { type: 'array', offset: start, length: -1, parent, children: [] };
    const array: unknown[] = [];
    this.pos++;
    this.skipTrivia();
    let c = t.charCodeAt(this.pos);
    while (c !== 93) {
      this.readValue(node);
      array.push(this.value);
      this.skipTrivia();
      c = t.charCodeAt(this.pos);
      if (c === 44) {
        this.pos++;
        this.skipTrivia();
        c = t.charCodeAt(this.pos);
      } else if (c !== 93) {
        throw NOT_PLAIN;
      }
    }
    node.length = this.pos + 1 - start;
    this.pos++;
    this.value = array;
    return node;
  }

  /** Reads the string token at `start` (its opening quote); sets `str` to its decoded text; returns the offset after it. */
  private scanString(start: number): number {
    const t = this.text;
    const n = t.length;
    let i = start + 1;
    let chunk = i;
    let decoded: string | null = null;
    for (;;) {
      PLAIN_CHARS.lastIndex = i;
      PLAIN_CHARS.test(t); // native: runs of characters that need no decoding
      i = PLAIN_CHARS.lastIndex;
      if (i >= n) throw NOT_PLAIN;
      const c = t.charCodeAt(i);
      if (c === 34) break;
      if (c === 92) {
        decoded = (decoded ?? '') + t.slice(chunk, i);
        const e = t.charCodeAt(i + 1);
        if (e === 117) {
          const hex = t.slice(i + 2, i + 6);
          if (!HEX4.test(hex)) throw NOT_PLAIN;
          decoded += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else {
          const unit = ESCAPED[e];
          if (unit === undefined) throw NOT_PLAIN;
          decoded += unit;
          i += 2;
        }
        chunk = i;
      } else {
        throw NOT_PLAIN; // a control character or line break inside a string: jsonc-parser reports it
      }
    }
    this.str = decoded === null ? t.slice(start + 1, i) : decoded + t.slice(chunk, i);
    return i + 1;
  }

  /** The end of the JSON number at `start` (RFC 8259 grammar, which jsonc-parser reads without error). */
  private scanNumber(start: number): number {
    const t = this.text;
    let i = start;
    if (t.charCodeAt(i) === 45) i++;
    const first = t.charCodeAt(i);
    if (first === 48) i++;
    else if (first >= 49 && first <= 57) i = digits(t, i + 1);
    else throw NOT_PLAIN;
    if (t.charCodeAt(i) === 46) {
      const after = digits(t, i + 1);
      if (after === i + 1) throw NOT_PLAIN;
      i = after;
    }
    const e = t.charCodeAt(i);
    if (e === 101 || e === 69) {
      i++;
      const sign = t.charCodeAt(i);
      if (sign === 43 || sign === 45) i++;
      const after = digits(t, i);
      if (after === i) throw NOT_PLAIN;
      i = after;
    }
    return i;
  }
}

/** The offset after the run of ASCII digits at `i`. */
function digits(t: string, i: number): number {
  for (let c = t.charCodeAt(i); c >= 48 && c <= 57; c = t.charCodeAt(++i));
  return i;
}

/** The escapes JSON allows besides `\u`, by the code of the character after the backslash. */
const ESCAPED: Record<number, string> = { 34: '"', 92: '\\', 47: '/', 98: '\b', 102: '\f', 110: '\n', 114: '\r', 116: '\t' };

const HEX4 = /^[0-9a-fA-F]{4}$/;
/** Blanks jsonc-parser skips (sticky: matched from lastIndex). */
const BLANKS = /[ \t\n\r]*/y;
/** String characters taken as they are: not the closing quote, a backslash or a control character. */
const PLAIN_CHARS = /[^"\\\u0000-\u001f]*/y;

/** Repeated properties found by walking a tree, in text order (for text jsonc-parser read itself). */
export function repeatedProperties(root: Node): RepeatedProperty[] {
  const out: RepeatedProperty[] = [];
  // One path stack for the whole walk (copied only for a repeated name).
  const p: (string | number)[] = [];
  const walk = (node: Node) => {
    if (node.type === 'object') {
      const names = new Set<string>();
      for (const prop of node.children ?? []) {
        const nameNode = prop.children?.[0];
        const name = String(nameNode?.value);
        if (names.has(name) && nameNode) out.push({ node: nameNode, path: [...p, name], name });
        names.add(name);
        const value = prop.children?.[1];
        if (value && (value.type === 'object' || value.type === 'array')) {
          p.push(name);
          walk(value);
          p.pop();
        }
      }
    } else if (node.type === 'array') {
      node.children?.forEach((c, i) => {
        if (c.type !== 'object' && c.type !== 'array') return;
        p.push(i);
        walk(c);
        p.pop();
      });
    }
  };
  walk(root);
  return out;
}
