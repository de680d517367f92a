import assert from 'node:assert/strict';
import { candidateLabel, groupedOrder, leadLines, memberLabel, oneLine, rowAfter, selectLines, type GroupedTask, type TaskRow } from '../../schemas/task-order';
import { parseManifest } from '../../extension/core/run/manifest';

// The one grouping every view uses (runs tree, dashboard, CLI): best-of-N candidates under their task's entry.

/** A best-of-N task as the compiler lays it out in state.json: the entry (after its candidates), then candidates. */
function group(key: string, n: number, entry: Partial<GroupedTask> = {}, after: string[] = []): GroupedTask[] {
  const keys = Array.from({ length: n }, (_, i) => `${key}--c${i + 1}`);
  return [{ key, group: key, select: 'first-pass', after: keys, ...entry }, ...keys.map((k, i) => ({ key: k, group: key, candidate: i + 1, after }))];
}

const shape = (rows: ReturnType<typeof groupedOrder<GroupedTask>>) =>
  rows.map((r) => [r.task.key, r.candidates.map((c) => [c.task.key, c.number, c.winner, c.score])]);

describe('groupedOrder: best-of-N candidates under their task', () => {
  it("nests each group's candidates by number under its entry, in graph order; a dependent of the task comes after it", () => {
    const tasks: GroupedTask[] = [{ key: 'report', after: ['fix'] }, ...group('fix', 3, { winner: 'fix--c2', status: 'PASS' }, ['setup']), { key: 'setup' }];
    // Candidates listed out of number order in the state file: still by number under the task.
    const swapped = [tasks[0], tasks[1], tasks[4], tasks[2], tasks[3], tasks[5]] as GroupedTask[];
    const rows = groupedOrder(swapped);
    assert.deepEqual(shape(rows), [
      ['setup', []],
      [
        'fix',
        [
          ['fix--c1', 1, false, null],
          ['fix--c2', 2, true, null],
          ['fix--c3', 3, false, null],
        ],
      ],
      ['report', []],
    ]);
    // The task's row shows what its candidates wait for, not its candidates.
    assert.deepEqual(rowAfter(rows[1] as (typeof rows)[number]).after, ['setup']);
    assert.deepEqual(rowAfter(rows[2] as (typeof rows)[number]).after, ['fix']);
  });

  it('a run without workflows is listed exactly as graphOrder lists it, every row without candidates', () => {
    const tasks: GroupedTask[] = [{ key: 'b', after: ['a'] }, { key: 'a' }, { key: 'c' }];
    assert.deepEqual(shape(groupedOrder(tasks)), [
      ['a', []],
      ['b', []],
      ['c', []],
    ]);
  });

  it('ranked: scores by candidate key, the winner marked; labels show them; the tie and disagreement are said once', () => {
    const rows = groupedOrder(
      group('pick', 2, {
        select: 'ranked',
        winner: 'pick--c1',
        scores: { 'pick--c1': 7.5, 'pick--c2': 7.5 },
        tie: 'tie between A (candidate 1) and B (candidate 2) at 7.5: the lowest candidate number wins',
        disagreement: 'reviewers disagree: codex ranked A first, claude ranked B first',
        reason: 'ranked: candidate 1 (A) wins with a mean score of 7.5 over 2 ranking(s)',
      }),
    );
    const [row] = rows;
    assert.deepEqual(
      row?.candidates.map((c) => candidateLabel(c)),
      ['candidate 1 · winner · score 7.5', 'candidate 2 · score 7.5'],
    );
    assert.deepEqual(selectLines(row?.task as GroupedTask), [
      'select ranked',
      'ranked: candidate 1 (A) wins with a mean score of 7.5 over 2 ranking(s)',
      'tie between A (candidate 1) and B (candidate 2) at 7.5: the lowest candidate number wins',
      'reviewers disagree: codex ranked A first, claude ranked B first',
    ]);
    // A reason that already says them (decideRanking's does) does not get them twice.
    const said = {
      ...(row?.task as GroupedTask),
      reason: 'ranked: candidate 1 wins; tie between A and B; reviewers disagree: x',
      tie: 'tie between A and B',
      disagreement: 'reviewers disagree: x',
    };
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
    assert.deepEqual(shape(groupedOrder(tasks)), [
      ['lost--c1', []],
      ['self', []],
      ['plain', []],
    ]);
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

/** A manifest's tasks as the loader compiles them, then as state.json lists them (the runner copies these fields). */
function compiled(tasks: Record<string, unknown>[], status: Record<string, string> = {}): GroupedTask[] {
  const { manifest, problems } = parseManifest(JSON.stringify({ tasks }), '/m.json');
  assert.deepEqual(
    problems.filter((p) => p.severity === 'error'),
    [],
  );
  return (manifest?.tasks ?? []).map((t) => ({
    key: t.key,
    ...(t.after.length ? { after: t.after } : {}),
    ...(t.group !== undefined ? { group: t.group } : {}),
    ...(t.candidate !== undefined ? { candidate: t.candidate } : {}),
    ...(t.select !== undefined ? { select: t.select } : {}),
    ...(t.workflow !== undefined ? { workflow: t.workflow } : {}),
    status: status[t.key] ?? 'PASS',
  }));
}

const task = (key: string, extra: Record<string, unknown> = {}) => ({ key, engine: 'script', spec: 'echo x > x.txt', check: 'test -s x.txt', ...extra });
const members = (rows: TaskRow<GroupedTask>[]) =>
  rows.map((r) => [r.task.key, r.role, r.members.map((m) => [m.task.key, m.role, m.number, m.letter, m.blocking])]);

describe('groupedOrder: validated, council and phases members under their lead, from the compiled structure', () => {
  it('validate: the workers under the validator by number with their letters; a blocked validator names the worker that blocked it', () => {
    const tasks = compiled(
      [task('prep'), task('sort', { after: ['prep'], validate: { workers: 3, check: 'test -s validation.md' } }), task('ship', { after: ['sort'] })],
      { 'sort--w2': 'FAIL', sort: 'BLOCKED' },
    );
    // Listed out of order in the state file: still the lead's place, members by number.
    const rows = groupedOrder([...tasks].reverse(), { sort: { 'sort--w1': 'B', 'sort--w2': 'A', 'sort--w3': 'C' } });
    assert.deepEqual(members(rows), [
      ['prep', null, []],
      [
        'sort',
        'validator',
        [
          ['sort--w1', 'worker', 1, 'B', false],
          ['sort--w2', 'worker', 2, 'A', true],
          ['sort--w3', 'worker', 3, 'C', false],
        ],
      ],
      ['ship', null, []],
    ]);
    const sort = rows[1] as TaskRow<GroupedTask>;
    assert.deepEqual(
      sort.blockedBy.map((m) => m.task.key),
      ['sort--w2'],
    );
    assert.deepEqual(leadLines(sort), ['validator of 3 workers', 'blocked by worker 2 · A (sort--w2 FAIL)']);
    assert.deepEqual(
      sort.members.map((m) => memberLabel(m)),
      ['worker 1 · B', 'worker 2 · A', 'worker 3 · C'],
    );
    // The validator's row waits for what the task waits for, not for its workers.
    assert.deepEqual(rowAfter(sort).after, ['prep']);
    assert.deepEqual(rowAfter(rows[2] as TaskRow<GroupedTask>).after, ['sort']);
    // Not blocked: no member blocks, even one that failed; without inputNames, no letters.
    const passed = groupedOrder(compiled([task('sort', { validate: { workers: 2, check: 'true' } })], { 'sort--w1': 'FAIL', sort: 'queued' }));
    assert.deepEqual(members(passed), [
      [
        'sort',
        'validator',
        [
          ['sort--w1', 'worker', 1, null, false],
          ['sort--w2', 'worker', 2, null, false],
        ],
      ],
    ]);
    assert.deepEqual(leadLines(passed[0] as TaskRow<GroupedTask>), ['validator of 2 workers']);
  });

  it("council: answers, then reviews, under the chair; a review bears its author's answer letter", () => {
    const tasks = compiled([
      task('q', {
        check: 'test -s answer.md',
        council: {
          members: [
            { engine: 'script', model: 'm1' },
            { engine: 'script', model: 'm2' },
          ],
          chair: { check: 'test -s synthesis.md' },
        },
      }),
    ]);
    const rows = groupedOrder(tasks, { q: { 'q--a1': 'B', 'q--a2': 'A' } });
    assert.deepEqual(members(rows), [
      [
        'q',
        'chair',
        [
          ['q--a1', 'answer', 1, 'B', false],
          ['q--a2', 'answer', 2, 'A', false],
          ['q--r1', 'review', 1, 'B', false],
          ['q--r2', 'review', 2, 'A', false],
        ],
      ],
    ]);
    assert.deepEqual(leadLines(rows[0] as TaskRow<GroupedTask>), ['chair of 2 answers, 2 reviews']);
    assert.deepEqual(
      rows[0]?.members.map((m) => memberLabel(m)),
      ['answer 1 · B', 'answer 2 · A', 'review 1 · by B', 'review 2 · by A'],
    );
    assert.equal(rowAfter(rows[0] as TaskRow<GroupedTask>).after, undefined, 'the council waits for nothing the task did not');
  });

  it('phases: the implement tasks under the test phase; the test phase waits for what the task waits for', () => {
    const tasks = compiled(
      [
        task('lib'),
        task('case', {
          after: ['lib'],
          spec: 'echo {file}',
          check: 'test -s {file}',
          expect_files: ['{file}'],
          phases: { files: ['a.sh', 'b.sh'], test: { engine: 'codex', check: 'bash t.sh' } },
        }),
      ],
      { 'case--impl-1': 'FAIL', case: 'BLOCKED' },
    );
    const rows = groupedOrder(tasks);
    assert.deepEqual(members(rows), [
      ['lib', null, []],
      [
        'case',
        'test',
        [
          ['case--impl-1', 'implement', 1, null, true],
          ['case--impl-2', 'implement', 2, null, false],
        ],
      ],
    ]);
    assert.deepEqual(leadLines(rows[1] as TaskRow<GroupedTask>), ['test phase of 2 implement tasks', 'blocked by implement 1 (case--impl-1 FAIL)']);
    assert.deepEqual(rowAfter(rows[1] as TaskRow<GroupedTask>).after, ['lib']);
  });

  it('look-alike keys: tasks the user named like members are never grouped; only the compiled structure groups', () => {
    // `x--w1` with no validated `x`, `y--a1`/`y--r1` beside a plain `y`, `z--impl-1` after a plain `z`, and a
    // validated `v` of 2 workers beside a plain `v--w3` that failed.
    const tasks = compiled(
      [
        task('x--w1'),
        task('y'),
        task('y--a1'),
        task('y--r1', { after: ['y--a1'] }),
        task('z'),
        task('z--impl-1', { after: ['z'] }),
        task('v', { validate: { workers: 2, check: 'test -s validation.md' } }), // `v--w3` even writes the field the compiler sets: the loader never reads it from a manifest.
        task('v--w3', { workflow: { lead: 'v', role: 'worker', member: 3 } }),
        task('x', { after: ['x--w1'] }),
      ],
      { v: 'BLOCKED', 'v--w3': 'FAIL' },
    );
    const rows = groupedOrder(tasks, { v: { 'v--w1': 'A', 'v--w2': 'B', 'v--w3': 'C' }, y: { 'y--a1': 'A' } });
    assert.deepEqual(members(rows), [
      ['x--w1', null, []],
      ['y', null, []],
      ['y--a1', null, []],
      ['y--r1', null, []],
      ['z', null, []],
      ['z--impl-1', null, []],
      [
        'v',
        'validator',
        [
          ['v--w1', 'worker', 1, 'A', false],
          ['v--w2', 'worker', 2, 'B', false],
        ],
      ],
      ['v--w3', null, []],
      ['x', null, []],
    ]);
    assert.deepEqual((rows[6] as TaskRow<GroupedTask>).blockedBy, [], 'a look-alike that failed does not block the validator');
  });

  it('a damaged or forged state: a member whose lead is missing, of another role, or does not wait for it stays a row of its own', () => {
    const tasks: GroupedTask[] = [
      { key: 'lost', workflow: { lead: 'gone', role: 'worker', member: 1 } },
      { key: 'v', after: ['w'], workflow: { lead: 'v', role: 'validator' } },
      { key: 'w', workflow: { lead: 'v', role: 'worker', member: 1 } },
      { key: 'a', workflow: { lead: 'v', role: 'answer', member: 1 } },
      { key: 'n', workflow: { lead: 'v', role: 'worker', member: 2 } },
      { key: 'z', workflow: { lead: 'v', role: 'worker', member: 0 } },
      { key: 'self', workflow: { lead: 'self', role: 'worker', member: 1 } },
      { key: 'odd', workflow: { lead: 'odd', role: 'stranger' } },
    ];
    assert.deepEqual(members(groupedOrder(tasks)), [
      ['lost', null, []],
      ['v', 'validator', [['w', 'worker', 1, null, false]]],
      ['a', null, []],
      ['n', null, []],
      ['z', null, []],
      ['self', null, []],
      ['odd', null, []],
    ]);
    // A letters map with an inherited name gives no letter.
    const rows = groupedOrder(tasks, JSON.parse('{"v": {"__proto__": {"w": "Q"}}}'));
    assert.equal(rows[1]?.members[0]?.letter, null);
  });

  it("hostile keys in a lead's lines come out as one line", () => {
    const evil = 'v\u001b[2J\nPASS';
    const tasks: GroupedTask[] = [
      { key: evil, status: 'BLOCKED', after: [`${evil}--w1`], workflow: { lead: evil, role: 'validator' } },
      { key: `${evil}--w1`, status: 'FAIL', workflow: { lead: evil, role: 'worker', member: 1 } },
    ];
    for (const line of leadLines(groupedOrder(tasks)[0] as TaskRow<GroupedTask>)) assert.doesNotMatch(line, /[\u0000-\u001f\u007f-\u009f]/);
  });
});
