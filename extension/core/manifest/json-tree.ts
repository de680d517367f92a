/**
 * Manifest text (JSONC: comments and trailing commas allowed) read once into what the loader and the linter both use:
 * jsonc-parser's tree (parseTree), the value (getNodeValue) and the properties that appear twice in an object. The
 * loader and the rules share the one value (they each built one before, which cost a second walk of 1,000 tasks: docs/performance.md "Start-up"). Everything JSONC is
 * jsonc-parser's, errors and their positions included; only the walk for repeated properties is Verdict's.
 */
import { getNodeValue, parseTree, type JSONPath, type Node, type ParseError } from 'jsonc-parser';

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
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length || !root) return { root, errors, value: undefined, repeated: [] };
  return { root, errors, value: getNodeValue(root), repeated: repeatedProperties(root) };
}

/** Repeated properties found by walking a tree, in text order (one pass over the tree, one path stack). */
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
