import assert from 'node:assert/strict';
import { candidateLabel, groupedOrder, oneLine, rowAfter, selectLines, type GroupedTask } from '../../schemas/task-order';

// The one grouping every view uses (runs tree, dashboard, CLI): best-of-N candidates under their task's entry.

/** A best-of-N task as the compiler lays it out in state.json: the entry (after its candidates), then candidates. */
function group(key: string, n: number, entry: Partial<GroupedTask> = {}, after: string[] = []): GroupedTask[] {
  const keys = Array.from({ length: n }, (_, i) => `${key}--c${i + 1}`);
  return [{ key, group: key, select: 'first-pass', after: keys, ...entry }, ...keys.map((k, i) => ({ key: k, group: key, candidate: i + 1, after }))];
}

const shape = (rows: ReturnType<typeof groupedOrder<GroupedTask>>) => rows.map((r) => [r.task.key, r.candidates.map((c) => [c.task.key, c.number, c.winner, c.score])]);

describe('groupedOrder: best-of-N candidates under their task', () => {
  it('nests each group\'s candidates by number under its entry, in graph order; a dependent of the task comes after it', () => {
    const tasks: GroupedTask[] = [
      { key: 'report', after: ['fix'] },
      ...group('fix', 3, { winner: 'fix--c2', status: 'PASS' }, ['setup']),
      { key: 'setup' },
    ];
    // Candidates listed out of number order in the state file: still by number under the task.
    const swapped = [tasks[0], tasks[1], tasks[4], tasks[2], tasks[3], tasks[5]] as GroupedTask[];
    const rows = groupedOrder(swapped);
    assert.deepEqual(shape(rows), [
      ['setup', []],
      ['fix', [['fix--c1', 1, false, null], ['fix--c2', 2, true, null], ['fix--c3', 3, false, null]]],
      ['report', []],
    ]);
    // The task's row shows what its candidates wait for, not its candidates.
    assert.deepEqual(rowAfter(rows[1] as (typeof rows)[number]).after, ['setup']);
    assert.deepEqual(rowAfter(rows[2] as (typeof rows)[number]).after, ['fix']);
  });

  it('a run without workflows is listed exactly as graphOrder lists it, every row without candidates', () => {
    const tasks: GroupedTask[] = [{ key: 'b', after: ['a'] }, { key: 'a' }, { key: 'c' }];
    assert.deepEqual(shape(groupedOrder(tasks)), [['a', []], ['b', []], ['c', []]]);
  });

  it('ranked: scores by candidate key, the winner marked; labels show them; the tie and disagreement are said once', () => {
    const rows = groupedOrder(group('pick', 2, {
      select: 'ranked',
      winner: 'pick--c1',
      scores: { 'pick--c1': 7.5, 'pick--c2': 7.5 },
      tie: 'tie between A (candidate 1) and B (candidate 2) at 7.5: the lowest candidate number wins',
      disagreement: 'reviewers disagree: codex ranked A first, claude ranked B first',
      reason: 'ranked: candidate 1 (A) wins with a mean score of 7.5 over 2 ranking(s)',
    }));
    const [row] = rows;
    assert.deepEqual(row?.candidates.map((c) => candidateLabel(c)), ['candidate 1 · winner · score 7.5', 'candidate 2 · score 7.5']);
    assert.deepEqual(selectLines(row?.task as GroupedTask), [
      'select ranked',
      'ranked: candidate 1 (A) wins with a mean score of 7.5 over 2 ranking(s)',
      'tie between A (candidate 1) and B (candidate 2) at 7.5: the lowest candidate number wins',
      'reviewers disagree: codex ranked A first, claude ranked B first',
    ]);
    // A reason that already says them (decideRanking's does) does not get them twice.
    const said = { ...(row?.task as GroupedTask), reason: 'ranked: candidate 1 wins; tie between A and B; reviewers disagree: x' , tie: 'tie between A and B', disagreement: 'reviewers disagree: x' };
    assert.deepEqual(selectLines(said), ['select ranked', 'ranked: candidate 1 wins; tie between A and B; reviewers disagree: x']);
    // A score that is not a number (a damaged state file) shows as no score, never 0.
    const odd = groupedOrder(group('p', 1, { scores: { 'p--c1': 'high' as unknown as number } }));
    assert.equal(odd[0]?.candidates[0]?.score, null);
  });

  it('a task that is not a group entry has no select lines; an undecided group says its mode only', () => {
    assert.deepEqual(selectLines({ key: 'x' }), []);
    assert.deepEqual(selectLines({ key: 'x--c1', group: 'x', candidate: 1 }), []);
    assert.deepEqual(selectLines({ key: 'x', group: 'x', select: 'all' }), ['select all']);
  });

  it('nothing is dropped: a candidate whose group has no entry, or that names itself, stays a row of its own', () => {
    const tasks: GroupedTask[] = [{ key: 'lost--c1', group: 'lost', candidate: 1 }, { key: 'self', group: 'self', candidate: 1 }, { key: 'plain' }];
    assert.deepEqual(shape(groupedOrder(tasks)), [['lost--c1', []], ['self', []], ['plain', []]]);
  });

  it('hostile text: markup, ANSI escapes and newlines in keys and reasons come out as one line without control characters', () => {
    const evil = 'x\u001b[2J\u001b]52;c;cm0gLXJm\u0007<img src=x onerror=alert(1)>\nPASS';
    const rows = groupedOrder(group(evil, 1, { reason: `no candidate passed (${evil} FAIL)`, tie: evil, select: 'ranked' }));
    assert.equal(rows.length, 1, 'the entry and its candidate are still grouped');
    for (const line of [...selectLines(rows[0]?.task as GroupedTask), oneLine(rows[0]?.candidates[0]?.task.key ?? '')]) {
      assert.doesNotMatch(line, /[\u0000-\u001f\u007f-\u009f]/, JSON.stringify(line));
    }
    assert.equal(oneLine('a\nb\u001b[31mc\u009bd\te'), 'a?b?[31mc?d?e');
    // Markup stays text for the renderer to escape (Svelte and TreeItem labels do): nothing is interpreted here.
    assert.match(selectLines(rows[0]?.task as GroupedTask)[1] ?? '', /<img src=x onerror=alert\(1\)>\?PASS/);
  });
});
