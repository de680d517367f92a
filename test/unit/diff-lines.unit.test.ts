import assert from 'node:assert/strict';
import { diffLines } from '../../webview/format';

describe("dashboard: a diff's lines by kind (the browser page colours them)", () => {
  it('tells file headers, hunk headers, added, removed and unchanged lines apart, across files', () => {
    const text = [
      'diff --git a/a.txt b/a.txt',
      'index 1111111..2222222 100644',
      '--- a/a.txt',
      '+++ b/a.txt',
      '@@ -1,2 +1,2 @@ heading',
      ' same',
      '-old',
      '+new',
      '\\ No newline at end of file',
      'diff --git a/b.txt b/b.txt',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/b.txt',
      '@@ -0,0 +1 @@',
      '+b',
      '',
    ].join('\n');
    assert.deepEqual(
      diffLines(text).map((l) => l.kind),
      ['meta', 'meta', 'meta', 'meta', 'hunk', 'context', 'del', 'add', 'context', 'meta', 'meta', 'meta', 'meta', 'hunk', 'add'],
    );
    assert.equal(
      diffLines(text)
        .map((l) => `${l.text}\n`)
        .join(''),
      text,
      'the text is kept, line for line',
    );
  });

  it("reads a line by where it is, not by how it looks: an added '++ x' or removed '-- y' inside a hunk is a change, not a file header; markup stays text", () => {
    const text = ['diff --git a/x b/x', '--- a/x', '+++ b/x', '@@ -1 +1,2 @@', '--- y', '+++ x', '+<script>alert(1)</script>'].join('\n');
    assert.deepEqual(diffLines(text), [
      { kind: 'meta', text: 'diff --git a/x b/x' },
      { kind: 'meta', text: '--- a/x' },
      { kind: 'meta', text: '+++ b/x' },
      { kind: 'hunk', text: '@@ -1 +1,2 @@' },
      { kind: 'del', text: '--- y' },
      { kind: 'add', text: '+++ x' },
      { kind: 'add', text: '+<script>alert(1)</script>' },
    ]);
    assert.deepEqual(diffLines(''), []);
  });
});
