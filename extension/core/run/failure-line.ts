// The one line that says why a check failed, for the task's reason (runs tree, `verdict runs`, notifications): test
// runners end their output with summaries ("# duration_ms 1934.77", "1 failed, 2 passed in 0.1s"), so the last line
// rarely names what failed; the assertion a few lines above does.

/** Trailing summary lines that never say what failed: TAP/node:test counters, blank or rule-only lines. */
const SUMMARY = /^(#\s*(duration_ms|tests|suites|pass|fail|cancelled|skipped|todo|ok)\b.*|[-=_*#~.\s]*|\d+\.\.\d+)$/i;

/**
 * What names a failure, most telling first: pytest's `E` lines, an assertion's or an error's message, expected/actual,
 * a failed test's name (TAP `not ok`, pytest `FAILED`, Go `--- FAIL`, mocha's numbered failures).
 */
const TELLING = [
  /^E\s+\S/,
  /\b(AssertionError|AssertError)\b[^:]*:\s*\S/,
  /(error|exception|panic)\b[^:]*:\s*\S/i,
  /\b(expected|actual)\b/i,
  /^(not ok\b|FAILED\b|--- FAIL\b|\d+\) )/,
];

/**
 * The line of a failed check's output (its tail) that says what failed: the first of {@link TELLING}'s kinds found in
 * the last 80 lines (the latest such line), else the last line that is not a summary; at most 160 characters, trimmed.
 * '' when the output has no line.
 */
export function failureLine(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .slice(-80);
  let end = lines.length;
  while (end > 0 && SUMMARY.test(lines[end - 1] as string)) end--;
  const body = lines.slice(0, end);
  let pick: string | undefined;
  for (const re of TELLING) {
    pick = body.findLast((l) => re.test(l));
    if (pick) break;
  }
  const line = pick ?? body.at(-1) ?? lines.findLast(Boolean) ?? '';
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}
