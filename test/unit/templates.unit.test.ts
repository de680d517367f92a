import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { lintManifestFile } from '../../extension/core/manifest/lint';
import { loadManifest } from '../../extension/core/manifest/load';
import { ctx } from './lint-helpers';

/** The workflow templates (docs/workflows.md): every one loads and lints without an error or a warning. */
describe('templates/', () => {
  const dir = path.resolve('templates');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.swarm.jsonc')).sort();

  it('holds a template per workflow', () => {
    assert.deepEqual(files, ['best-of-n.swarm.jsonc', 'generated.swarm.jsonc']);
  });

  for (const f of files) {
    it(`${f} loads and lints clean`, async () => {
      const file = path.join(dir, f);
      assert.ok(loadManifest(file, { engines: new Set(ctx.engines.keys()) }).manifest.tasks.length > 0);
      const findings = (await lintManifestFile(file, ctx)).filter((x) => x.severity !== 'info');
      assert.deepEqual(findings.map((x) => `${x.rule}: ${x.message}`), []);
    });
  }
});
