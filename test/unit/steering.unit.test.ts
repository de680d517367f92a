import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { driverNotesFor, parseProfile, profileCandidates, RunSteering, workerBlock } from '../../extension/core/run/steering';

const rule = (n: number, id: string, status: string, audience: string | null, inject: string) =>
  `## R${n} · ${id}\n\n\`\`\`yaml\nid: ${id}\nstatus: ${status}\n${audience ? `audience: ${audience}\n` : ''}\`\`\`\n\n**Inject:** ${inject}\n\n**Detail:** why.\n`;

describe('steering profiles (parser and injection)', () => {
  it('parses Ringer format 1: front matter, rules in order, audience driver by default, unparseable rules skipped', () => {
    const text = `---\nkind: steering-profile\nformat: 1\nmodel: glm-5\nprofile_version: 1.2.0\n---\n\n${rule(1, 'a', 'confirmed', 'worker', 'Do A.\nStill A.')}${rule(2, 'b', 'stale-pending-reverify', 'worker', 'Do B.')}${rule(3, 'c', 'candidate', null, 'Tell it C.')}${rule(4, 'd', 'maybe', 'worker', 'Bad status.')}## Environment notes\n\n- x — cli, 2026-01-01\n`;
    const p = parseProfile(text, '/s/profiles/glm-5.md');
    assert.deepEqual([p.model, p.version, p.slug], ['glm-5', '1.2.0', 'glm-5']);
    assert.deepEqual(
      p.rules.map((r) => [r.id, r.status, r.audience, r.inject]),
      [
        ['a', 'confirmed', 'worker', 'Do A. Still A.'],
        ['b', 'stale-pending-reverify', 'worker', 'Do B.'],
        ['c', 'candidate', 'driver', 'Tell it C.'],
      ],
    );
    assert.equal(
      workerBlock(p),
      '[Steering profile glm-5 v1.2.0, injected by Verdict]\n- Do A. Still A.\n- (unverified on current model version) Do B.\n[End steering profile]\n\n',
    );
    assert.equal(workerBlock({ ...p, rules: p.rules.filter((r) => r.audience === 'driver') }), '', 'no worker rule: no empty block');
  });

  it('refuses a profile without front matter, without model, or whose rule sections none parse', () => {
    assert.throws(() => parseProfile('## R1 · a\n', 'f'), /no front matter/);
    assert.throws(() => parseProfile('---\nformat: 1\n---\n', 'f'), /no model/);
    assert.throws(() => parseProfile('---\nmodel: m\n---\n## R1 · a\n\nno yaml\n', 'f'), /none of its 1 rule section/);
  });

  it('looks up openrouter/z-ai/glm-5 as openrouter-z-ai-glm-5.md, then glm-5.md', () => {
    assert.deepEqual(profileCandidates('openrouter/z-ai/GLM-5'), ['openrouter-z-ai-glm-5', 'glm-5']);
  });

  it('fails open: no directory, an unreadable profile, an unwritable observation folder change nothing and say so once', () => {
    const notes: string[] = [];
    assert.equal(new RunSteering(null, (n) => notes.push(n)).prompt({}, 'm', 'spec'), 'spec');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'steer-'));
    fs.mkdirSync(path.join(dir, 'profiles'));
    fs.mkdirSync(path.join(dir, 'profiles', 'm.md'));
    const s = new RunSteering(dir, (n) => notes.push(n));
    for (let i = 0; i < 3; i++) assert.equal(s.prompt({}, 'm', 'spec'), 'spec');
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, /skipped .*m\.md: cannot read it/);
    fs.writeFileSync(path.join(dir, 'observations'), 'a file where a folder should be');
    for (let i = 0; i < 3; i++) s.observe({}, { task_key: 't' });
    assert.equal(notes.length, 2);
    assert.match(notes[1]!, /observation row could not be written/);
    assert.deepEqual(driverNotesFor('/nonexistent-home', ['m'], { VERDICT_STEERING_DIR: dir }), [
      `steering: skipped ${path.join(dir, 'profiles', 'm.md')}: cannot read it: EISDIR: illegal operation on a directory, read`,
    ]);
  });
});
