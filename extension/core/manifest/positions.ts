import { findNodeAtLocation, type Node, type JSONPath } from 'jsonc-parser';

/** A 1-based line and column inside a text file. */
export interface Position {
  line: number;
  column: number;
}

/** A half-open range of a value in the manifest text: offsets are 0-based UTF-16 indices, line/column 1-based. */
export interface SourceRange {
  offset: number;
  length: number;
  start: Position;
  end: Position;
}

/**
 * Maps 0-based string offsets to 1-based line/column, built once per text (line starts found by one scan).
 * Columns count UTF-16 code units, as editors and jsonc-parser do.
 */
export class LineIndex {
  private readonly lineStarts: number[] = [0];

  constructor(text: string) {
    // indexOf is native: a 1,000-task manifest is ~300,000 characters, a cold loop over each cost ~2 ms.
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
  }

  /** 0-based offset → 1-based {line, column}. */
  position(offset: number): Position {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.lineStarts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (this.lineStarts[lo] ?? 0) + 1 };
  }

  /** The range of [offset, offset+length). */
  range(offset: number, length: number): SourceRange {
    return { offset, length, start: this.position(offset), end: this.position(offset + length) };
  }
}

/**
 * The range of the value at `path` in a parsed tree; for a missing property, the range of the closest existing
 * parent (so "required property missing" points at the object that lacks it). Null only when the tree is empty.
 */
export function rangeOfPath(root: Node | undefined, path: JSONPath, index: LineIndex): SourceRange | null {
  if (!root) return null;
  for (let n = path.length; n >= 0; n--) {
    const node = findNodeAtLocation(root, path.slice(0, n));
    if (node) return index.range(node.offset, node.length);
  }
  return null;
}

/** The range of the property name `key` in the object at `path`, or null when absent. */
export function rangeOfPropertyName(root: Node | undefined, path: JSONPath, key: string, index: LineIndex): SourceRange | null {
  const obj = root && findNodeAtLocation(root, path);
  const prop = obj?.children?.find((c) => c.type === 'property' && c.children?.[0]?.value === key);
  const name = prop?.children?.[0];
  return name ? index.range(name.offset, name.length) : null;
}

/** Formats a JSON path the way users read it: `tasks[2].key`. */
export function formatPath(path: JSONPath): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out || '(root)';
}
