import assert from 'node:assert/strict';
import { parseTree } from 'jsonc-parser';
import { parseShell } from '../../extension/core/manifest/rules/shell';
import { scriptOutcome } from '../../extension/core/manifest/rules/check-outcome';
import { JsonString } from '../../extension/core/manifest/rules/json-string';
import { LineIndex } from '../../extension/core/manifest/positions';

/** The helpers under the check rules: the bash reader, the outcome evaluation, the JSON string offset map. */
describe('lint: shell reader', () => {
  const shape = (src: string) =>
    parseShell(src).map((l) => ({
      sep: l.separatorBefore?.op ?? null,
      ops: l.ops.map((o) => o.op),
      pipelines: l.pipelines.map((p) => p.commands.map((c) => `${c.kind}:${src.slice(c.start, c.end)}`)),
    }));

  it('splits lists, and-or chains, pipelines and commands, keeping quotes, $(...) and <(...) inside words', () => {
    assert.deepEqual(shape(`test "$(./f.sh | tail -n 1)" = x && diff <(echo a) b.txt; echo 'a;b' | wc -l`), [
      { sep: null, ops: ['&&'], pipelines: [['simple:test "$(./f.sh | tail -n 1)" = x'], ['simple:diff <(echo a) b.txt']] },
      { sep: ';', ops: [], pipelines: [["simple:echo 'a;b'", 'simple:wc -l']] },
    ]);
  });

  it('reads groups into their inside and keeps if/for/case opaque', () => {
    assert.deepEqual(shape('a || { echo no; exit 1; }\nif grep -q x f; then :; fi 2>/dev/null\ncase $x in a) b;; esac'), [
      { sep: null, ops: ['||'], pipelines: [['simple:a'], ['group:{ echo no; exit 1; }']] },
      { sep: '\n', ops: [], pipelines: [['compound:if grep -q x f; then :; fi 2>/dev/null']] },
      { sep: '\n', ops: [], pipelines: [['compound:case $x in a) b;; esac']] },
    ]);
  });

  it('keeps redirections such as 2>&1 and &>/dev/null in the command', () => {
    assert.deepEqual(shape('npm test 2>&1 &>/dev/null'), [{ sep: null, ops: [], pipelines: [['simple:npm test 2>&1 &>/dev/null']] }]);
  });

  it('evaluates outcomes: || true always succeeds, set -e makes earlier failures count, ! inverts', () => {
    const fails = (src: string) => scriptOutcome(parseShell(src)).canFail;
    assert.equal(fails('npm test || true'), false);
    assert.equal(fails('npm test; true'), false);
    assert.equal(fails('set -e; npm test; true'), true);
    assert.equal(fails('set -o pipefail; npm test | true'), true);
    assert.equal(fails('npm test | true'), false);
    assert.equal(fails('! true'), true);
    assert.equal(fails('a && b || { echo no; exit 1; }'), true);
    assert.equal(fails('(exit 0)'), false);
  });
});

describe('lint: JSON string offsets', () => {
  const at = (json: string) => {
    const text = `{"check": ${json}}`;
    const node = parseTree(text)?.children?.[0]?.children?.[1];
    assert.ok(node);
    return { text, s: new JsonString(node, text, new LineIndex(text)) };
  };

  it('maps decoded offsets past \\n, \\" and \\u escapes to the raw token', () => {
    const { text, s } = at('"a\\n\\"b\\u00e9 || true"');
    assert.equal(s.value, 'a\n"bé || true');
    const i = s.value.indexOf('|| true');
    const r = s.rangeOf(i, i + '|| true'.length);
    assert.equal(text.slice(r.offset, r.offset + r.length), '|| true');
    const q = s.rangeOf(2, 4);
    assert.equal(text.slice(q.offset, q.offset + q.length), '\\"b');
  });

  it('maps each half of a surrogate pair, escaped or not', () => {
    const { text, s } = at('"\\ud83d\\ude00 ok 😀 ok"');
    const r = s.rangeOf(s.value.lastIndexOf('ok'), s.value.length);
    assert.equal(text.slice(r.offset, r.offset + r.length), 'ok');
  });

  it('covers the whole token for the whole value', () => {
    const { text, s } = at('"x"');
    assert.equal(text.slice(s.range.offset, s.range.offset + s.range.length), '"x"');
  });
});
