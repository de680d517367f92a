/**
 * parseJsonc (extension/core/manifest/json-tree.ts), the one read of a manifest's text the loader and the linter share:
 * jsonc-parser's tree, errors and value as parseTree and getNodeValue give them, and the repeated properties (the
 * walk that is Verdict's own: every repeat, in text order, with its path), on hand-written texts.
 */
import assert from 'node:assert/strict';
import { getNodeValue, parseTree, type Node, type ParseError } from 'jsonc-parser';
import { parseJsonc } from '../../extension/core/manifest/json-tree';
import { parseManifest } from '../../extension/core/run/manifest';

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

/** The check every text gets; returns whether the text read without errors. */
function agrees(text: string): boolean {
  const ref = reference(text);
  const read = parseJsonc(text);
  const where = JSON.stringify(text);
  assert.deepEqual(read.errors, ref.errors, `errors of ${where}`);
  if (ref.errors.length || !ref.root) {
    assert.equal(read.value, undefined);
    assert.deepEqual(read.repeated, []);
    return false;
  }
  assert.ok(read.root, `a tree for ${where}`);
  sameTree(read.root, ref.root, where);
  assert.deepStrictEqual(read.value, getNodeValue(ref.root), `value of ${where}`);
  return true;
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

describe('json-tree: one read of manifest text (jsonc-parser) for the loader and the linter', () => {
  it('reads hand-written texts (comments, trailing commas, escapes, numbers, repeats, __proto__) as parseTree + getNodeValue', () => {
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
    for (const text of texts) assert.ok(agrees(text), `${JSON.stringify(text)} should read without errors`);
  });

  it("gives jsonc-parser's errors, and no value, for every text jsonc-parser reports", () => {
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
    for (const text of bad) assert.equal(agrees(text), false, `${JSON.stringify(text)} should have errors`);
  });

  it("lists every repeated property in text order with its path, the later occurrence's name node", () => {
    const read = parseJsonc(RICH);
    assert.deepEqual(
      read.repeated.map((r) => ({ path: r.path, name: r.name, text: RICH.slice(r.node.offset, r.node.offset + r.node.length) })),
      [
        { path: ['tasks', 0, 'key'], name: 'key', text: '"key"' },
        { path: ['tasks', 1, 'nested', 'x', 'x'], name: 'x', text: '"x"' },
        { path: ['tasks'], name: 'tasks', text: '"tasks"' },
      ],
    );
    const later = read.repeated[0] as { node: { offset: number } };
    assert.ok(later.node.offset > RICH.indexOf('"key"'), 'the later "key", not the first');
  });

  it('keeps a property named __proto__ an ordinary property in the value the loader validates (no prototype set)', () => {
    const { value } = parseManifest('{"tasks": [{"key": "a", "spec": "s", "check": "true", "__proto__": {"verified": "v"}}]}', '/m/x.swarm.json', {
      problemsOnly: true,
    });
    const task = (value as { tasks: Record<string, unknown>[] }).tasks[0] as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(task), null);
    assert.equal(task.verified, undefined, 'verified must not be inherited through __proto__');
    assert.deepEqual(Object.keys(task), ['key', 'spec', 'check', '__proto__']);
  });
});
