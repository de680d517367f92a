import assert from 'node:assert/strict';
import fs from 'node:fs';
import Ajv from 'ajv';
import { DATE_TIME, GENERATED, SCHEMAS, generateValidators } from '../../schemas/validators.build.mjs';
import * as generated from '../../schemas/validators.generated.js';

/**
 * The validators compiled at build time (schemas/validators.build.mjs → schemas/validators.generated.js, committed so
 * type-checking and these tests work from a clean clone before any build) must be those of today's schemas.
 */
describe('schemas/validators.generated.js (Ajv standalone code)', () => {
  it('is what schemas/validators.build.mjs generates from the schemas as they are now (else: run node esbuild.mjs)', () => {
    const { js, dts } = generateValidators();
    const stale = 'stale: a schema in schemas/ changed since the validators were generated; run `node esbuild.mjs` and commit schemas/validators.generated.*';
    assert.ok(fs.readFileSync(GENERATED.js, 'utf8') === js, stale);
    assert.ok(fs.readFileSync(GENERATED.dts, 'utf8') === dts, stale);
  });

  it('exports one validator per schema, each judging a document as Ajv compiling the schema at run time does', () => {
    const samples: Record<string, unknown[]> = {
      validateManifest: [{ tasks: [{ key: 'a', spec: 's', check: 'true' }] }, { tasks: [{ key: 'a/b', spec: 's', check: 'true' }] }, { tasks: 'no' }, { tasks: [{ key: 'ok', spec: '', check: 'true', max_attempts: 0 }] }],
      validateEvalRow: [{}, { run_id: 'r', ended_at: '2026-01-01T00:00:00Z' }, { run_id: 'r', ended_at: 'yesterday' }],
      validateEngineEntry: [{ argv: ['x', '{spec}'] }, { argv: 'x' }, {}],
      validateReviewAnswer: [{ verdict: 'approve', concerns: [] }, { verdict: 'changes', concerns: [] }, { verdict: 'maybe' }],
      validateRankAnswer: [{ scores: { a: 3 } }, { scores: { a: 11 } }, { scores: 'x' }],
    };
    for (const [name, file] of Object.entries(SCHEMAS)) {
      const runtime = new Ajv({ allErrors: true, strict: false, formats: { 'date-time': DATE_TIME } }).compile(JSON.parse(fs.readFileSync(`schemas/${file}`, 'utf8')));
      const built = (generated as Record<string, typeof runtime>)[name];
      assert.ok(built, `${name} is not exported`);
      for (const doc of samples[name] ?? []) {
        assert.equal(built(doc), runtime(doc), `${name} on ${JSON.stringify(doc)}`);
        assert.deepEqual(built.errors ?? null, runtime.errors ?? null, `${name}'s errors on ${JSON.stringify(doc)}`);
      }
    }
  });

  it('counts maxLength in code points, as Ajv does (its ucs2length runtime helper is imported, not lost)', () => {
    const src = fs.readFileSync(GENERATED.js, 'utf8');
    assert.match(src, /import ucs2lengthModule from 'ajv\/dist\/runtime\/ucs2length\.js'/);
    assert.doesNotMatch(src, /require\(/);
  });
});
