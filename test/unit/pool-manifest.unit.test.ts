import assert from 'node:assert/strict';
import { parseManifest } from '../../extension/core/run/manifest';

const task = { key: 't', engine: 'script', spec: 'true', check: 'true' };

describe('manifest: pool and remote (docs/scale.md)', () => {
  it('reads pool and remote; a remote starting with . is relative to the manifest, a URL is kept as written', () => {
    const rel = parseManifest(JSON.stringify({ worktrees: true, pool: 'postgres://u@db/v', remote: './remote.git', tasks: [task] }), '/srv/app/app.swarm.json');
    assert.equal(rel.manifest?.pool, 'postgres://u@db/v');
    assert.equal(rel.manifest?.remote, '/srv/app/remote.git');
    const url = parseManifest(JSON.stringify({ worktrees: true, remote: 'git@git.internal:team/app.git', tasks: [task] }), '/srv/app/app.swarm.json');
    assert.equal(url.manifest?.remote, 'git@git.internal:team/app.git');
    assert.equal(url.manifest?.pool, null);
  });

  it('refuses an empty pool URL, naming the field', () => {
    const r = parseManifest(JSON.stringify({ pool: '', tasks: [task] }), '/srv/app/app.swarm.json');
    assert.ok(
      r.problems.some((p) => p.severity === 'error' && /pool/.test(p.path + p.message)),
      JSON.stringify(r.problems),
    );
  });
});
