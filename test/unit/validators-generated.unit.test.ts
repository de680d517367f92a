import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import {
  DATE_TIME,
  EDITOR_SCHEMA,
  GENERATED_DIR,
  SCHEMAS,
  editorSchemaText,
  forTheEditor,
  generateValidators,
  withoutAnnotations,
} from '../../schemas/validators.build.mjs';

/**
 * Manifests whose lengths count differently in code points and UTF-16 units (maxLength 255 on validate.report, 100
 * on generate-less names; minLength 1 everywhere): astral characters, a lone high surrogate, a high surrogate last.
 */
function astralSamples(): unknown[] {
  const task = (report: string, spec: string) => ({ tasks: [{ key: 'a', spec, check: 'true', validate: { check: 'true', report } }] });
  return [
    task('😀'.repeat(255), '😀'),
    task('😀'.repeat(256), '\uD83D'),
    task(`${'😀'.repeat(254)}a\uD83D`, 'x\uD83D'),
    task('\uDE00'.repeat(256), '\uDE00'),
    task('é'.repeat(255), ''),
  ];
}

/** Every generated module, by export name (each exports only its own validator). */
const generated: Record<string, Record<string, unknown>> = {};
before(async () => {
  for (const name of Object.keys(SCHEMAS)) generated[name] = (await import(path.join(GENERATED_DIR, `${name}.js`))) as Record<string, unknown>;
});

/**
 * The validators compiled at build time (schemas/validators.build.mjs → schemas/generated/<name>.js, one module per
 * schema, committed so type-checking and these tests work from a clean clone before any build) must be those of
 * today's schemas.
 */
describe('schemas/generated/*.js (Ajv standalone code, one module per schema)', () => {
  it('is what schemas/validators.build.mjs generates from the schemas as they are now (else: run node esbuild.mjs)', () => {
    const stale = 'stale: a schema in schemas/ changed since the validators were generated; run `node esbuild.mjs` and commit schemas/generated/*';
    const modules = generateValidators();
    assert.deepEqual(Object.keys(modules).sort(), Object.keys(SCHEMAS).sort());
    for (const [name, { js, dts }] of Object.entries(modules)) {
      assert.ok(fs.readFileSync(path.join(GENERATED_DIR, `${name}.js`), 'utf8') === js, `${name}.js ${stale}`);
      assert.ok(fs.readFileSync(path.join(GENERATED_DIR, `${name}.d.ts`), 'utf8') === dts, `${name}.d.ts ${stale}`);
    }
    assert.ok(fs.readFileSync(path.join(GENERATED_DIR, EDITOR_SCHEMA.file), 'utf8') === editorSchemaText(), `${EDITOR_SCHEMA.file} ${stale}`);
    const extra = fs.readdirSync(GENERATED_DIR).filter((f) => f !== EDITOR_SCHEMA.file && !(f.replace(/\.d\.ts$|\.js$/, '') in SCHEMAS));
    assert.deepEqual(extra, [], 'schemas/generated/ holds files of no schema');
  });

  it('leaves out annotations only where they are keywords (a property named "title" or "default" stays)', () => {
    const schema = {
      title: 't',
      description: 'd',
      type: 'object',
      properties: { title: { type: 'string', description: 'x' }, default: { type: 'number', default: 1 } },
      items: [{ examples: [1], type: 'number' }],
      definitions: { a: { $comment: 'c', enum: ['description'] } },
    };
    assert.deepEqual(withoutAnnotations(schema), {
      type: 'object',
      properties: { title: { type: 'string' }, default: { type: 'number' } },
      items: [{ type: 'number' }],
      definitions: { a: { enum: ['description'] } },
    });
  });

  it('exports one validator per schema, each judging a document as Ajv compiling the schema at run time does', () => {
    const samples: Record<string, unknown[]> = {
      validateManifest: [
        { tasks: [{ key: 'a', spec: 's', check: 'true' }] },
        { tasks: [{ key: 'a/b', spec: 's', check: 'true' }] },
        { tasks: 'no' },
        { tasks: [{ key: 'ok', spec: '', check: 'true', max_attempts: 0 }] },
        { tree: 'nope', max_parallel: 'x', tasks: [{ key: 'a', spec: 's', check: 'true', select: 'x', validate: { bogus: 1 }, review: { engines: [] } }] },
        ...astralSamples(),
      ],
      validateEvalRow: [{}, { run_id: 'r', ended_at: '2026-01-01T00:00:00Z' }, { run_id: 'r', ended_at: 'yesterday' }],
      validateEngineEntry: [{ argv: ['x', '{spec}'] }, { argv: 'x' }, {}],
      validateReviewAnswer: [{ verdict: 'approve', concerns: [] }, { verdict: 'changes', concerns: [] }, { verdict: 'maybe' }],
      validateRankAnswer: [{ scores: { a: 3 } }, { scores: { a: 11 } }, { scores: 'x' }],
    };
    for (const [name, file] of Object.entries(SCHEMAS)) {
      const runtime = new Ajv({ allErrors: true, strict: false, formats: { 'date-time': DATE_TIME } }).compile(
        JSON.parse(fs.readFileSync(`schemas/${file}`, 'utf8')),
      );
      const built = generated[name]?.[name] as typeof runtime | undefined;
      assert.ok(built, `${name} is not exported by schemas/generated/${name}.js`);
      assert.deepEqual(Object.keys(generated[name] ?? {}), [name], `schemas/generated/${name}.js exports only ${name}`);
      for (const doc of samples[name] ?? []) {
        assert.equal(built(doc), runtime(doc), `${name} on ${JSON.stringify(doc)}`);
        assert.deepEqual(built.errors ?? null, runtime.errors ?? null, `${name}'s errors on ${JSON.stringify(doc)}`);
      }
    }
  });

  it('counts maxLength in code points, as Ajv does (its ucs2length runtime helper is imported, not lost)', () => {
    const src = fs.readFileSync(path.join(GENERATED_DIR, 'validateManifest.js'), 'utf8');
    assert.match(src, /import ucs2lengthModule from 'ajv\/dist\/runtime\/ucs2length\.js'/);
    for (const name of Object.keys(SCHEMAS)) assert.doesNotMatch(fs.readFileSync(path.join(GENERATED_DIR, `${name}.js`), 'utf8'), /require\(/);
  });
});

/**
 * The editor's manifest schema (package.json's jsonValidation): VS Code's JSON language service reads it for
 * completion and hover only. The extension's lint reports every schema error itself; the language service judging
 * too put a second diagnostic, in other words, beside each lint error.
 */
describe("schemas/generated/manifest.editor.schema.json (the editor's: completion and hover, no judgement)", () => {
  const full = JSON.parse(fs.readFileSync('schemas/manifest.schema.json', 'utf8')) as Record<string, unknown>;
  const editor = JSON.parse(fs.readFileSync(path.join(GENERATED_DIR, EDITOR_SCHEMA.file), 'utf8')) as Record<string, unknown>;

  it('is the one package.json gives VS Code for *.swarm.json and *.swarm.jsonc', () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { contributes: { jsonValidation: Array<{ fileMatch: string[]; url: string }> } };
    assert.deepEqual(pkg.contributes.jsonValidation, [{ fileMatch: ['*.swarm.json', '*.swarm.jsonc'], url: `./schemas/generated/${EDITOR_SCHEMA.file}` }]);
  });

  it('judges nothing: manifests the full schema refuses in every way it can are valid to it', () => {
    const strict = new Ajv({ allErrors: true, strict: false, formats: { 'date-time': DATE_TIME } }).compile(full);
    const loose = new Ajv({ allErrors: true, strict: false }).compile(editor);
    const bad = [
      {},
      { tasks: 'no', bogus: 1 },
      { tree: 'nope', max_parallel: 'x', budget_usd: -1, logins: { 'bad name!': { engines: 'x' } }, route: { prefer: 'speed' } },
      { tasks: [{ key: 'a..b', spec: 1, check: [], select: 'x', network: 'maybe', review: { engines: [] }, engine_args: 3, inputs: [] }] },
      { tasks: [{ key: 'a', spec: 's', check: 'true', validate: { bogus: 1 }, guard: 'yes', allow_deps: 'x', fallback: [{}], review: true }] },
      { tasks: [{ generate: 1, key: '', max_attempts: 0, timeout_s: -5, distinguish: { inputs: '' } }] },
    ];
    for (const doc of bad) {
      assert.equal(strict(doc), false, `the full schema refuses ${JSON.stringify(doc)}`);
      assert.equal(loose(doc), true, `the editor's accepts ${JSON.stringify(doc)}: ${JSON.stringify(loose.errors)}`);
    }
  });

  it('keeps every property the full schema describes, with its description, and offers each enum and const as an example', () => {
    const missing: string[] = [];
    const visited: string[] = [];
    const walk = (a: unknown, b: unknown, at: string) => {
      if (typeof a !== 'object' || a === null) return;
      visited.push(at);
      const x = a as Record<string, unknown>;
      const y = (b ?? {}) as Record<string, unknown>;
      if (typeof x.description === 'string' && x.description !== y.description) missing.push(`${at}: description`);
      for (const v of [...((x.enum as unknown[]) ?? []), ...('const' in x ? [x.const] : [])])
        if (!((y.examples as unknown[]) ?? []).includes(v)) missing.push(`${at}: example ${JSON.stringify(v)}`);
      for (const map of ['properties', 'patternProperties', 'definitions'])
        for (const [k, v] of Object.entries((x[map] as Record<string, unknown>) ?? {}))
          walk(v, (y[map] as Record<string, unknown> | undefined)?.[k], `${at}/${map}/${k}`);
      for (const [from, to] of [
        ['oneOf', 'anyOf'],
        ['anyOf', 'anyOf'],
        ['allOf', 'allOf'],
      ] as const)
        ((x[from] as unknown[]) ?? []).forEach((v, i) => walk(v, (y[to] as unknown[] | undefined)?.[i], `${at}/${from}/${i}`));
      if (typeof x.items === 'object') walk(x.items, y.items, `${at}/items`);
      if (typeof x.additionalProperties === 'object') walk(x.additionalProperties, y.additionalProperties, `${at}/additionalProperties`);
    };
    walk(full, editor, '#');
    assert.deepEqual(missing, []);
    assert.ok(visited.includes('#/definitions/task/properties/distinguish/properties/inputs/oneOf/0'), 'the walk reached the nested task properties');
  });

  it('maps keywords as it says: oneOf → anyOf, enum/const → examples, additionalProperties false dropped, its object form kept', () => {
    const schema = {
      type: 'object',
      required: ['a'],
      additionalProperties: false,
      properties: {
        a: { oneOf: [{ type: 'string', minLength: 1 }, { const: false }], description: 'A' },
        b: { enum: ['x', 'y'], examples: ['x'], default: 'x' },
        m: { type: 'object', additionalProperties: { type: 'number', minimum: 0, description: 'N' }, propertyNames: { pattern: '^a' } },
        not: { not: { pattern: 'x' } },
      },
    };
    assert.deepEqual(forTheEditor(schema, 'id:x'), {
      $id: 'id:x',
      properties: {
        a: { anyOf: [{}, { examples: [false] }], description: 'A' },
        b: { examples: ['x', 'y'], default: 'x' },
        m: { additionalProperties: { description: 'N' } },
        not: {},
      },
    });
  });
});
