import type { Rule, RuleFinding } from './document';
import { jsonEscape } from './json-string';

/** Where a port number hides in a check; group 1 is the number. */
const PORT_PATTERNS = [
  /(?:\blocalhost|\b127\.0\.0\.1|\b0\.0\.0\.0|\[::1\]):(\d{2,5})(?!\d)/g, // localhost:3000
  /(?:--port|--listen-port)(?:=|[ \t]+)(\d{2,5})(?!\d)/g, // --port 5173, --port=5173
  /\bPORT=(\d{2,5})(?!\d)/g, // PORT=3000 npm start
  /[A-Za-z0-9\]]:(\d{2,5})(?=\/)/g, // http://host:8000/
];
/** What every PORT_PATTERNS match contains: a check without it is not searched (most checks; one native test each). */
const MAY_NAME_PORT = /:\d|--(?:listen-)?port|PORT=/;

/**
 * hard-coded-port (warning): the check names a literal port (`localhost:3000`, `127.0.0.1:8080`, `--port 5173`,
 * `PORT=3000`, `host:8000/`). Tasks run in parallel and each gets its own `PORT` (step `prepare`: docs/attempt.md "The steps"), so
 * a literal port makes parallel checks fight over one socket or talk to the wrong task's server. The range is
 * the number; the quick fix replaces it with `$PORT` (`'"$PORT"'` inside single quotes, where `$PORT` would not
 * expand).
 */
export const hardCodedPort: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const check = task.check;
    if (!check || !MAY_NAME_PORT.test(check.value)) continue;
    const seen = new Set<number>();
    for (const pattern of PORT_PATTERNS) {
      for (const m of check.value.matchAll(pattern)) {
        const port = m[1] as string;
        const start = (m.index ?? 0) + m[0].length - port.length; // every pattern ends with the number
        const n = Number(port);
        if (seen.has(start) || n < 1 || n > 65535) continue;
        seen.add(start);
        const range = check.rangeOf(start, start + port.length);
        out.push({
          rule: 'hard-coded-port',
          severity: 'warning',
          message: `The check hard-codes port ${port}, but tasks run in parallel and each gets its own PORT, so checks would fight over ${port} or reach another task's server. Use $PORT.`,
          range,
          taskKey: task.key,
          fix: { title: `Use $PORT instead of ${port}`, range, newText: jsonEscape(insideSingleQuotes(check.value, start) ? `'"$PORT"'` : '$PORT') },
        });
      }
    }
  }
  return out;
};

/** Whether decoded offset `at` of a shell command lies inside single quotes. */
function insideSingleQuotes(src: string, at: number): boolean {
  let single = false;
  let double = false;
  for (let i = 0; i < at; i++) {
    const c = src[i];
    if (c === '\\' && !single) i++;
    else if (c === "'" && !double) single = !single;
    else if (c === '"' && !single) double = !double;
  }
  return single;
}
