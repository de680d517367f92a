import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Workspace } from '../../extension/cli/mcp/workspace';
import { tempDir } from '../helpers/fixtures';

describe('mcp Workspace.landing / holds: where a path lands once its links are followed', () => {
  it('follows links as far as the path exists, dangling links and link loops included', () => {
    const dir = tempDir();
    const ws = path.join(dir, 'ws');
    fs.mkdirSync(path.join(ws, 'inner'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'out'));
    fs.symlinkSync(path.join(dir, 'out'), path.join(ws, 'to-out'));
    fs.symlinkSync(path.join(dir, 'not-yet'), path.join(ws, 'dangling'));
    fs.symlinkSync('inner', path.join(ws, 'to-inner'));
    fs.symlinkSync('loop-b', path.join(ws, 'loop-a'));
    fs.symlinkSync('loop-a', path.join(ws, 'loop-b'));
    // A dangling link reached through a linked folder: its `..` climbs from the real folder, not the link's name.
    fs.symlinkSync('../elsewhere/y', path.join(dir, 'out', 'up'));
    const w = new Workspace(ws);
    assert.equal(Workspace.landing(path.join(ws, 'to-out', 'up')), path.join(dir, 'elsewhere', 'y'));
    assert.equal(Workspace.landing(path.join(ws, 'inner', 'a', 'b')), path.join(ws, 'inner', 'a', 'b'), 'a path not made yet lands under its existing parent');
    assert.equal(Workspace.landing(path.join(ws, 'to-out', 'new', 'x')), path.join(dir, 'out', 'new', 'x'));
    assert.equal(Workspace.landing(path.join(ws, 'dangling', 'x')), path.join(dir, 'not-yet', 'x'), 'a dangling link lands where it points');
    assert.equal(Workspace.landing(path.join(ws, 'to-inner', 'x')), path.join(ws, 'inner', 'x'));
    assert.equal(Workspace.landing(path.join(ws, 'inner', '..', '..', 'out')), path.join(dir, 'out'));
    assert.ok(w.holds(path.join(ws, 'to-inner', 'x')));
    assert.ok(w.holds(ws));
    assert.ok(!w.holds(path.join(ws, 'to-out')));
    assert.ok(!w.holds(path.join(ws, 'dangling')));
    assert.ok(!w.holds(path.join(ws, '..', 'ws-sibling')));
    assert.ok(!w.holds(`${ws}-sibling`), 'a folder whose name only starts like the workspace is outside');
    // A loop resolves nowhere: it stays a name inside the workspace (nothing can be made through it).
    assert.ok(w.holds(path.join(ws, 'loop-a', 'x')));
  });
});
