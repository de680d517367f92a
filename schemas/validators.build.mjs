// Generates schemas/generated/<name>.js (and its .d.ts), one module per JSON Schema in schemas/, compiled ahead of time
// by Ajv's standalone code (https://ajv.js.org/standalone.html), so no process compiles a schema at run time (compiling
// the manifest schema alone cost ~90 ms of every `verdict lint`), and a command loads only the validators it uses
// (`verdict lint` the manifest's, not the eval row's). esbuild.mjs writes the files when they differ; they are
// committed, so type-checking and the unit tests work from a clean clone before any build, and
// test/unit/validators-generated.unit.test.ts fails (naming `node esbuild.mjs`) when a schema changed and they did not.
// Plain JS: esbuild.mjs imports it.
import Ajv from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Export name → schema file (in schemas/). The Ajv options are the ones every caller used at run time. */
export const SCHEMAS = {
  validateManifest: 'manifest.schema.json',
  validateEvalRow: 'eval-row.schema.json',
  validateEngineEntry: 'engine.schema.json',
  validateReviewAnswer: 'review-answer.schema.json',
  validateRankAnswer: 'rank-answer.schema.json',
  validateCritiqueAnswer: 'critique-answer.schema.json',
};

/**
 * `format: "date-time"` (eval rows' started_at / ended_at): ISO 8601 with a zone, as Date.toISOString writes it.
 * Ajv inlines a RegExp format into the generated code.
 */
export const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Keywords that only annotate (JSON Schema draft-07 §10, and VS Code's markdownDescription): they never change a
 * judgement or an error, so they are left out of the generated code, where Ajv would otherwise embed them in the
 * schema objects it keeps (the manifest schema's descriptions were most of its validator's size).
 */
const ANNOTATIONS = new Set(['title', 'description', 'markdownDescription', 'examples', 'default', '$comment']);
/** Keywords whose value is one subschema, a list of them, or a map of them (draft-07). */
const SUBSCHEMA = new Set(['items', 'additionalItems', 'additionalProperties', 'contains', 'propertyNames', 'not', 'if', 'then', 'else']);
const SUBSCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'items']);
const SUBSCHEMA_MAP = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependencies']);

/** A copy of `schema` without annotation keywords (only where a key is a keyword: a property named "title" stays). */
export function withoutAnnotations(schema) {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key)) continue;
    if (SUBSCHEMA_LIST.has(key) && Array.isArray(value)) out[key] = value.map(withoutAnnotations);
    else if (SUBSCHEMA.has(key)) out[key] = withoutAnnotations(value);
    else if (SUBSCHEMA_MAP.has(key) && typeof value === 'object' && value !== null)
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? v : withoutAnnotations(v)]));
    else out[key] = value;
  }
  return out;
}

/**
 * Keywords the editor's schema keeps (what VS Code's JSON language service reads for completion, hover and snippets),
 * with the structure that reaches them; every other keyword only judges a value and is left out.
 */
const EDITOR_KEYWORDS = new Set([
  '$schema',
  'title',
  'description',
  'markdownDescription',
  'default',
  'examples',
  'defaultSnippets',
  'deprecationMessage',
  '$ref',
  'properties',
  'patternProperties',
  'definitions',
  '$defs',
  'items',
  'additionalProperties',
  'allOf',
  'anyOf',
]);

/**
 * The schema VS Code's JSON language service is given for manifests (package.json's jsonValidation): `schema` with
 * everything that judges a value left out, so it offers completion, hover and snippets but reports nothing. The
 * extension's lint already reports every schema error (with its rule, its exact range and quick fixes); the language
 * service reporting the same error a second time, in its own words, was noise. `enum` and `const` become `examples`
 * (still offered as completions), `oneOf` becomes `anyOf` (with nothing left to judge, every branch would match and
 * oneOf would fail), `additionalProperties: false` is dropped (its object form, the schema of a map's values, stays).
 * @param schema a JSON Schema (draft-07)
 * @param id the `$id` of the result
 */
export function forTheEditor(schema, id) {
  const walk = (node) => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return node;
    const out = {};
    const examples = [...(node.examples ?? []), ...(node.enum ?? []), ...('const' in node ? [node.const] : [])];
    for (const [key, value] of Object.entries(node)) {
      const as = key === 'oneOf' ? 'anyOf' : key;
      if (!EDITOR_KEYWORDS.has(as) || (key === 'additionalProperties' && typeof value !== 'object')) continue;
      if (SUBSCHEMA_LIST.has(as) && Array.isArray(value)) out[as] = value.map(walk);
      else if (SUBSCHEMA.has(as)) out[as] = walk(value);
      else if (SUBSCHEMA_MAP.has(as)) out[as] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
      else out[as] = value;
    }
    if (examples.length) out.examples = [...new Set(examples)];
    return out;
  };
  return { ...walk(schema), $id: id };
}

/** The editor's manifest schema (forTheEditor): generated/manifest.editor.schema.json, which package.json names. */
export const EDITOR_SCHEMA = {
  from: 'manifest.schema.json',
  file: 'manifest.editor.schema.json',
  id: 'https://verdict.dev/schemas/manifest.editor.schema.json',
};

/** The editor schema's text as written: forTheEditor of EDITOR_SCHEMA.from, two-space JSON with a final newline. */
export function editorSchemaText() {
  const schema = JSON.parse(fs.readFileSync(path.join(here, EDITOR_SCHEMA.from), 'utf8'));
  return JSON.stringify(forTheEditor(schema, EDITOR_SCHEMA.id), null, 2) + '\n';
}

/** The one runtime helper the code uses (maxLength/minLength count code points, not UTF-16 units). */
const UCS2LENGTH = 'require("ajv/dist/runtime/ucs2length")';
/**
 * How the generated code gets it: Ajv's own, called only for a string holding a high surrogate (0xD800-0xDBFF), the
 * only strings whose count of code points differs from their length; every other string is counted by its length.
 * (Ajv's loop over every character was ~10 ms of a 1,000-task lint, cold.) Bundlers and Node disagree on what a
 * default import of a CommonJS module is (module.exports or its .default), so take whichever is the function.
 */
const UCS2LENGTH_PRELUDE = [
  "import ucs2lengthModule from 'ajv/dist/runtime/ucs2length.js';",
  'const ucs2lengthOfAjv = ucs2lengthModule.default ?? ucs2lengthModule;',
  'const ucs2length = (s) => (/[\\uD800-\\uDBFF]/.test(s) ? ucs2lengthOfAjv(s) : s.length);',
];

/**
 * The generated modules' texts and declarations, one module per schema, each exporting its one validator.
 * @returns export name (a key of SCHEMAS) → `{ js, dts }`
 * @throws Error when a schema does not compile, or Ajv's output uses a runtime helper this generator does not map
 */
export function generateValidators() {
  const out = {};
  for (const [name, file] of Object.entries(SCHEMAS)) {
    const ajv = new Ajv({ allErrors: true, strict: false, formats: { 'date-time': DATE_TIME }, code: { source: true, esm: true } });
    ajv.addSchema(withoutAnnotations(JSON.parse(fs.readFileSync(path.join(here, file), 'utf8'))), name);
    let code = standaloneCode(ajv, { [name]: name });
    // Ajv's ESM output still require()s its runtime helpers; make that one an import (UCS2LENGTH_PRELUDE).
    const others = [...code.matchAll(/require\("[^"]+"\)/g)].map((m) => m[0]).filter((r) => r !== UCS2LENGTH);
    if (others.length) throw new Error(`validators.build.mjs: Ajv's code uses ${others.join(', ')}; map it like ucs2length`);
    const helper = code.includes(UCS2LENGTH);
    code = code.split(UCS2LENGTH).join('{ default: ucs2length }');
    const header = `// Generated by schemas/validators.build.mjs (node esbuild.mjs) from schemas/${file}: do not edit.`;
    const js = [header, '/* eslint-disable */', ...(helper ? UCS2LENGTH_PRELUDE : []), code.replace(/^"use strict";/, ''), ''].join('\n');
    const dts = [
      header,
      "import type { ValidateFunction } from 'ajv';",
      `/** Validates against schemas/${file} (Ajv standalone code; errors in \`.errors\`). */\nexport declare const ${name}: ValidateFunction;`,
      '',
    ].join('\n');
    out[name] = { js, dts };
  }
  return out;
}

/** Where the generated files live: schemas/generated/<export name>.js and .d.ts. */
export const GENERATED_DIR = path.join(here, 'generated');

/** Writes the generated files when their text changed (an unchanged file keeps its mtime: no watch rebuild loop). */
export function writeValidators() {
  fs.mkdirSync(GENERATED_DIR, { recursive: true });
  const files = Object.entries(generateValidators()).flatMap(([name, { js, dts }]) => [
    [path.join(GENERATED_DIR, `${name}.js`), js],
    [path.join(GENERATED_DIR, `${name}.d.ts`), dts],
  ]);
  files.push([path.join(GENERATED_DIR, EDITOR_SCHEMA.file), editorSchemaText()]);
  for (const [file, text] of files) {
    if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text) fs.writeFileSync(file, text);
  }
}
