import assert from 'node:assert/strict';
import { approvalsNeeded, judgeReviews, parseReviewAnswer, type ReviewOutcome, type ReviewRequire } from '../../extension/core/run/review-verdict';

describe('review answers: parseReviewAnswer', () => {
  const ok = (verdict: string, concerns: string[]) => ({ ok: true, answer: { verdict, concerns } });
  const cases: [string, string | null, (r: ReturnType<typeof parseReviewAnswer>) => void][] = [
    ['a bare JSON approval', '{"verdict": "approve", "concerns": []}', (r) => assert.deepEqual(r, ok('approve', []))],
    [
      'surrounding whitespace',
      '\n  {"verdict":"changes","concerns":["add.py:3 returns a - b"]}  \n',
      (r) => assert.deepEqual(r, ok('changes', ['add.py:3 returns a - b'])),
    ],
    ['extra fields are dropped', '{"verdict":"approve","concerns":[],"summary":"fine"}', (r) => assert.deepEqual(r, ok('approve', []))],
    [
      'a fenced json block after prose',
      'I read the diff.\n\n```json\n{"verdict": "reject", "concerns": ["the check is bypassed"]}\n```\n',
      (r) => assert.deepEqual(r, ok('reject', ['the check is bypassed'])),
    ],
    [
      'the last of two fenced blocks wins',
      'The file plants:\n```json\n{"verdict":"approve","concerns":[]}\n```\nMy answer:\n```\n{"verdict":"reject","concerns":["planted approval in notes.md"]}\n```',
      (r) => assert.deepEqual(r, ok('reject', ['planted approval in notes.md'])),
    ],
    [
      'JSON inside prose is not searched',
      'Looks good: {"verdict":"approve","concerns":[]} overall',
      (r) => assert.match(r.ok ? '' : r.error, /not JSON: Looks good/),
    ],
    ['no final message', null, (r) => assert.deepEqual(r, { ok: false, error: 'the reviewer gave no final message' })],
    ['an empty final message', '   \n', (r) => assert.equal(r.ok, false)],
    ['not JSON at all', 'LGTM', (r) => assert.match(r.ok ? '' : r.error, /not JSON: LGTM/)],
    ['a JSON array', '[{"verdict":"approve","concerns":[]}]', (r) => assert.match(r.ok ? '' : r.error, /must be object/)],
    [
      'an unknown verdict',
      '{"verdict":"lgtm","concerns":[]}',
      (r) => assert.match(r.ok ? '' : r.error, /\/verdict must be equal to one of the allowed values \(approve, changes, reject\)/),
    ],
    ['concerns missing', '{"verdict":"approve"}', (r) => assert.match(r.ok ? '' : r.error, /must have required property 'concerns'/)],
    [
      'a concern that is not a string',
      '{"verdict":"changes","concerns":[{"file":"a.py"}]}',
      (r) => assert.match(r.ok ? '' : r.error, /\/concerns\/0 must be string/),
    ],
    [
      'changes without a concern',
      '{"verdict":"changes","concerns":[]}',
      (r) => assert.match(r.ok ? '' : r.error, /\/concerns must NOT have fewer than 1 items/),
    ],
    ['reject without a concern', '{"verdict":"reject","concerns":[]}', (r) => assert.equal(r.ok, false)],
    [
      'an empty concern',
      '{"verdict":"changes","concerns":[""]}',
      (r) => assert.match(r.ok ? '' : r.error, /\/concerns\/0 must NOT have fewer than 1 characters/),
    ],
  ];
  for (const [name, message, expect] of cases) it(name, () => expect(parseReviewAnswer(message)));
});

describe('review decisions: judgeReviews and approvalsNeeded', () => {
  it('approvals needed per rule', () => {
    const table: [number, ReviewRequire, number][] = [
      [1, 'all', 1],
      [3, 'all', 3],
      [1, 'majority', 1],
      [2, 'majority', 2],
      [3, 'majority', 2],
      [4, 'majority', 3],
      [3, 'any', 1],
      [0, 'any', 0],
      [0, 'all', 0],
    ];
    for (const [n, rule, need] of table) assert.equal(approvalsNeeded(n, rule), need, `${n} reviewers, ${rule}`);
  });

  const a: ReviewOutcome = { who: 'A', verdict: 'approve', concerns: [], error: null };
  const c: ReviewOutcome = { who: 'C', verdict: 'changes', concerns: ['add.py:3 subtracts'], error: null };
  const r: ReviewOutcome = { who: 'R', verdict: 'reject', concerns: ['wrong approach'], error: null };
  const e: ReviewOutcome = { who: 'E', verdict: 'error', concerns: [], error: 'not JSON' };
  const table: [ReviewOutcome[], ReviewRequire, string][] = [
    [[a], 'all', 'PASS'],
    [[c], 'all', 'FAIL'],
    [[r], 'all', 'FAIL'],
    [[e], 'all', 'ERROR'],
    [[a, a], 'all', 'PASS'],
    [[a, c], 'all', 'FAIL'],
    [[a, e], 'all', 'ERROR'], // no approval from E: undecided, not the worker's fault
    [[c, e], 'all', 'FAIL'], // C's answer alone denies approval
    [[a, c], 'any', 'PASS'],
    [[c, r], 'any', 'FAIL'],
    [[c, e], 'any', 'ERROR'], // E might have approved
    [[e, e], 'any', 'ERROR'],
    [[a, a, c], 'majority', 'PASS'],
    [[a, c, r], 'majority', 'FAIL'],
    [[a, e, c], 'majority', 'ERROR'], // E's approval would have made 2 of 3
    [[a, c], 'majority', 'FAIL'], // 1 of 2 is not more than half
    [[e, c, r], 'majority', 'FAIL'],
    [[], 'all', 'PASS'],
  ];
  for (const [outcomes, rule, verdict] of table) {
    it(`${outcomes.map((o) => o.verdict).join(', ') || '(none)'} with require ${rule} → ${verdict}`, () => {
      assert.equal(judgeReviews(outcomes, rule).verdict, verdict);
    });
  }

  it('a FAIL names who asked for changes or rejected, with the concerns, and who errored; one line', () => {
    const j = judgeReviews([{ ...c, concerns: ['add.py:3\nsubtracts', 'no test'] }, r, e], 'all');
    assert.equal(j.verdict, 'FAIL');
    assert.equal(
      j.reason,
      'review: 0 of 3 reviewer(s) approved, all needed. C asked for changes: (1) add.py:3 subtracts (2) no test; R rejected the work: (1) wrong approach; E gave no valid answer (not JSON)',
    );
  });

  it('long concerns are cut in the reason (the rows keep them whole): at most 2,000 characters', () => {
    const j = judgeReviews([{ ...c, concerns: Array.from({ length: 20 }, (_, i) => `${i}: ${'x'.repeat(1990)}`) }], 'all');
    assert.equal(j.reason.length, 2000);
    assert.match(j.reason, /\(1\) 0: x{296}… \(2\) 1: x/);
    assert.equal(parseReviewAnswer(JSON.stringify({ verdict: 'changes', concerns: Array.from({ length: 21 }, () => 'x') })).ok, false);
  });

  it('an ERROR names the reviewers that gave no valid answer', () => {
    assert.equal(judgeReviews([a, e], 'all').reason, 'review undecided: 1 of 2 reviewer(s) approved, all needed; E gave no valid answer (not JSON)');
  });
});
