/**
 * The one-pass JSONC reader (extension/core/manifest/json-tree.ts) against jsonc-parser, which it stands in for
 * (issue 15 item 4): on every text it reads it must give exactly parseTree's tree (every node's type, offset, length,
 * colonOffset, value, parent and keys), getNodeValue's value and the repeated properties the tree walk finds; on text
 * jsonc-parser reports an error in, it must give up (so errors and their positions stay jsonc-parser's). Checked on
 * hand-written texts and on thousands of seeded random mutations of a manifest with every JSONC feature.
 */
import assert from 'node:assert/strict';
import { getNodeValue, parseTree, type Node, type ParseError } from 'jsonc-parser';
import { parseJsonc, readPlain, repeatedProperties } from '../../extension/core/manifest/json-tree';
import { parseManifest } from '../../extension/core/manifest/load';

/** jsonc-parser as the loader called it before the reader. */
function reference(text: string): { root: Node | undefined; errors: ParseError[] } {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  return { root, errors };
}

/** Asserts two trees are the same node for node; `at` names the place in a failure. */
function sameTree(actual: Node, expected: Node, at: string): void {
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${at}: keys`);
  for (const k of ['type', 'offset', 'length', 'colonOffset'] as const) assert.equal(actual[k], expected[k], `${at}: ${k}`);
  assert.ok(Object.is(actual.value, expected.value), `${at}: value ${String(actual.value)} vs ${String(expected.value)}`);
  assert.equal(actual.children?.length, expected.children?.length, `${at}: children`);
  (actual.children ?? []).forEach((child, i) => {
    assert.equal(child.parent, actual, `${at}/${i}: parent`);
    sameTree(child, (expected.children as Node[])[i] as Node, `${at}/${i}`);
  });
}

/** The check every text gets; returns whether the reader read it (false: it left it to jsonc-parser). */
function agrees(text: string): boolean {
  const ref = reference(text);
  const plain = readPlain(text);
  const read = parseJsonc(text);
  const where = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  assert.deepEqual(read.errors, ref.errors, `errors of ${where}`);
  if (ref.errors.length || !ref.root) {
    assert.equal(plain, null, `the reader must give up on ${where}, which jsonc-parser reports`);
    assert.equal(read.value, undefined);
    return false;
  }
  assert.ok(read.root, `a tree for ${where}`);
  sameTree(read.root, ref.root, where);
  assert.equal('parent' in read.root, false, 'the root has no parent property, as parseTree makes it');
  assert.deepStrictEqual(read.value, getNodeValue(ref.root), `value of ${where}`);
  const simple = (r: ReturnType<typeof repeatedProperties>) => r.map((d) => ({ path: d.path, name: d.name, offset: d.node.offset, length: d.node.length }));
  assert.deepEqual(simple(read.repeated), simple(repeatedProperties(ref.root)), `repeated properties of ${where}`);
  return plain !== null;
}

/** A manifest using every JSONC feature the reader handles. */
const RICH = [
  '// a manifest\r\n{',
  '  "$schema": "https://verdict.dev/schemas/manifest.schema.json", /* inline */',
  '  "run_name": "r\\u00e9n \\"quoted\\" \\\\ \\/ \\b\\f\\n\\r\\t \\ud83d\\ude00 é 😀",',
  '  "max_parallel": 8, "budget_usd": -0.5e-3, "n": [0, -0, 1, 12.25, 1E+2, 3e400, -7],',
  '  "worktrees": true, "tree": null, "flag": false,',
  '  "tasks": [',
  '    {"key": "a", "spec": "x", "check": "test -s a", "key": "b", "expect_files": ["a", "b",],},',
  '    {"key": "c", "__proto__": {"verified": "v"}, "nested": {"x": {"x": 1, "x": 2}}, "empty": {}, "none": []}, // end',
  '    [[[]]], "s", 5,',
  '  ],\t"tasks": /* again */ [],',
  '}',
  '',
].join('\n');

/** A seeded xorshift generator, so a failure names a reproducible case. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

describe('json-tree: the one-pass JSONC reader gives what jsonc-parser gives', () => {
  it('reads hand-written texts (comments, trailing commas, escapes, numbers, repeats, __proto__) exactly as parseTree + getNodeValue', () => {
    const texts = [
      RICH,
      '{}',
      '[]',
      ' "just a string" ',
      '-12.5e-3',
      'true',
      'null // trailing comment',
      '/* a */ {"a": [1, {"b": null}], "a": {"c": "d"}} /* z */',
      '{"a":1,"b":[true,false,null],"c":{"d":{"e":{"f":[[],[{}]]}}}}',
      '{"": "", "\\u0000": "\\u001f"}',
      '{"x": "\\uD800 lone"}',
      '{\r\n\t"a" : 1 ,\r\n}',
    ];
    for (const text of texts) assert.ok(agrees(text), `the reader should read ${JSON.stringify(text)} itself`);
  });

  it('gives up on every text jsonc-parser reports, and parseJsonc then gives its errors', () => {
    const bad = [
      '',
      '   ',
      '// only a comment',
      '{',
      '{"a": 1',
      '{"a" 1}',
      '{"a": }',
      '{a: 1}',
      "{'a': 1}",
      '{"a": 1,, "b": 2}',
      '{, "a": 1}',
      '[1,,2]',
      '[,]',
      '{"a": 01}',
      '{"a": 1.}',
      '{"a": .5}',
      '{"a": +1}',
      '{"a": 1e}',
      '{"a": -}',
      '{"a": truex}',
      '{"a": True}',
      '{"a": nul}',
      '{"a": "b\nc"}',
      '{"a": "tab\there"}',
      '{"a": "\\x41"}',
      '{"a": "\\u12G4"}',
      '{"a": "unterminated}',
      '{"a": 1} /* open',
      '{"a": 1} / x',
      '\ufeff{"a": 1}',
      '{"a":\u00a01}',
      '{"a":\u000b1}',
      '{"a": 1} {"b": 2}',
      '{"a": 1}]',
      '"a" "b"',
      '{"a": NaN}',
      '{"a": Infinity}',
    ];
    for (const text of bad) assert.equal(agrees(text), false, `${JSON.stringify(text)} should have been left to jsonc-parser`);
  });

  it('agrees with jsonc-parser on 4,000 random mutations of a rich manifest (deleted, inserted, doubled characters)', () => {
    const next = random(15);
    const alphabet = ['{', '}', '[', ']', '"', ':', ',', '/', '*', '\\', ' ', '\t', '\n', '\r', '0', '1', '9', '-', '+', '.', 'e', 'E', 't', 'r', 'u', 'f', 'n', 'l', 'x', 'é', '\u00a0', '\ufeff', '\u000b', '\u0001'];
    let readItself = 0;
    let leftToJsonc = 0;
    for (let round = 0; round < 4000; round++) {
      let text = RICH;
      const edits = 1 + Math.floor(next() * 3);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(next() * (text.length + 1));
        const kind = next();
        if (kind < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else if (kind < 0.8) text = text.slice(0, at) + (alphabet[Math.floor(next() * alphabet.length)] as string) + text.slice(at);
        else text = text.slice(0, at) + text.slice(at, at + 1 + Math.floor(next() * 12)) + text.slice(at);
      }
      if (agrees(text)) readItself++;
      else leftToJsonc++;
    }
    // Both paths must have been exercised for the comparison to mean anything.
    assert.ok(readItself > 300 && leftToJsonc > 300, `read itself ${readItself}, left to jsonc-parser ${leftToJsonc}`);
  });

  it('keeps a property named __proto__ an ordinary property in the value the loader validates (no prototype set)', () => {
    const { value } = parseManifest('{"tasks": [{"key": "a", "spec": "s", "check": "true", "__proto__": {"verified": "v"}}]}', '/m/x.swarm.json', { problemsOnly: true });
    const task = (value as { tasks: Record<string, unknown>[] }).tasks[0] as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(task), null);
    assert.equal(task.verified, undefined, 'verified must not be inherited through __proto__');
    assert.deepEqual(Object.keys(task), ['key', 'spec', 'check', '__proto__']);
  });
});
