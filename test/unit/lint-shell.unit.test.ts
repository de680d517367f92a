import assert from 'node:assert/strict';
import { parseTree } from 'jsonc-parser';
import { parseShell } from '../../extension/core/manifest/rules/shell';
import { RINGER_CHECK_FLAGS, scriptOutcome } from '../../extension/core/manifest/rules/check-outcome';
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
    assert.equal(fails('npm test | true'), true, 'Verdict runs checks with pipefail');
    assert.equal(scriptOutcome(parseShell('npm test | true'), RINGER_CHECK_FLAGS).canFail, false, 'Ringer ran them without');
    assert.equal(scriptOutcome(parseShell('set +o pipefail; npm test | true')).canFail, false);
    assert.equal(fails('! true'), true);
    assert.equal(fails('a && b || { echo no; exit 1; }'), true);
    assert.equal(fails('(exit 0)'), false);
  });

  it('reads an if into its clauses: conditions, then-branches, else, and whether fi closed it', () => {
    const src = 'if grep -q a f; then echo a; elif test -s g; then exit 1; else { echo none; }; fi >log';
    const [list] = parseShell(src);
    const command = list?.pipelines[0]?.commands[0];
    assert.equal(command?.kind, 'compound');
    assert.equal(src.slice(command?.start, command?.end), src);
    const parts = command?.ifParts;
    assert.ok(parts);
    const text = (lists: { start: number; end: number }[]) => src.slice(lists[0]?.start, lists[lists.length - 1]?.end);
    assert.deepEqual(
      parts.clauses.map((c) => [text(c.condition), text(c.body)]),
      [
        ['grep -q a f', 'echo a'],
        ['test -s g', 'exit 1'],
      ],
    );
    assert.equal(text(parts.elseBody ?? []), '{ echo none; }');
    assert.equal(parts.closed, true);
    assert.equal(parseShell('if a; then b')[0]?.pipelines[0]?.commands[0]?.ifParts?.closed, false);
  });

  it('evaluates an if: no else means a false condition exits 0; a failing branch makes it able to fail', () => {
    const fails = (src: string) => scriptOutcome(parseShell(src)).canFail;
    assert.equal(fails('if grep -q x f; then echo good; fi'), false);
    assert.equal(fails('if npm test; then echo pass; else echo fail; fi'), false);
    assert.equal(fails('if grep -q x f; then echo good; else exit 1; fi'), true);
    assert.equal(fails('if grep -q TODO f; then echo "remove it"; exit 1; fi'), true);
    assert.equal(fails('if true; then :; else exit 1; fi'), false, 'the else never runs');
    assert.equal(fails('if false; then :; elif npm test; then :; fi'), false);
    assert.equal(fails('if a; then if b; then exit 1; fi; fi'), true, 'nested');
    assert.equal(fails('if a; then b'), true, 'half-typed: unknown');
  });

  it('marks a chain ended by & as backgrounded; its status is never seen', () => {
    const lists = parseShell('server & sleep 1; npm test &');
    assert.deepEqual(
      lists.map((l) => l.background?.op ?? null),
      ['&', null, '&'],
    );
    assert.equal(scriptOutcome(lists).canFail, false);
    assert.equal(scriptOutcome(parseShell('npm start & npm test')).canFail, true);
    assert.deepEqual(
      parseShell('npm test 2>&1 &>/dev/null').map((l) => l.background),
      [null],
    );
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
