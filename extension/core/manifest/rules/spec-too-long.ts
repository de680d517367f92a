import type { ArgvTemplateElement } from '../../../../engines/types';
import type { Rule, RuleFinding } from './document';

/**
 * The most bytes one argv element may have on Linux, its terminating NUL included: MAX_ARG_STRLEN, 32 pages of
 * 4 KiB (execve(2), "Limits on size of arguments and environment"). One byte more and execve fails with E2BIG.
 */
export const MAX_ARG_STRLEN = 131_072;
/** Room kept for what a retry appends to the spec (the previous failure; extension/core/run/prompt.ts). */
export const RETRY_HEADROOM_BYTES = 64 * 1024;

/**
 * spec-too-long: the task's engine passes the spec as one argv element (`{spec}` in its argv template), and on Linux
 * one element may be at most MAX_ARG_STRLEN = 131,072 bytes with its NUL (execve(2)); a longer one makes the worker
 * fail to start (`spawn E2BIG`), every attempt an ERROR.
 * - error: the element (the spec in UTF-8, plus whatever text its template element adds) does not fit;
 * - warning: it fits but is within 64 KiB of the limit, and the engine appends a retry's failure to the spec
 *   (`retryContext: "prompt"`) and the task may retry (`max_attempts` is not 1): the retry could fail to start.
 * Not checked: the total of argv and environment (ARG_MAX, `getconf ARG_MAX`, 2 MiB with the usual 8 MiB stack
 * limit): once the spec fits in one element, only an environment of ~1.9 MiB could break that total, and the
 * environment the worker gets is not in the manifest. Nothing for an engine that takes the spec another way (no
 * `{spec}` in its argv) or an unknown engine. The range is the spec value.
 */
export const specTooLong: Rule = (doc, ctx) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const spec = task.spec;
    const engine = ctx.engines.get(task.engine);
    const element = engine && specElement(engine.argv);
    if (!spec || !engine || element === null || element === undefined) continue;
    const specBytes = Buffer.byteLength(spec.value, 'utf8');
    const argBytes = Buffer.byteLength(element.split('{spec}').join(spec.value), 'utf8') + 1; // + the NUL
    // The texts only for a finding: toLocaleString is slow enough to count over a 1,000-task manifest.
    const size = () => `spec is ${n(specBytes)} bytes${argBytes - 1 !== specBytes ? ` (${n(argBytes - 1)} as the argument)` : ''}`;
    const limit = () => `one argument may be at most ${n(MAX_ARG_STRLEN)} bytes on Linux (execve(2) MAX_ARG_STRLEN, its terminating NUL included)`;
    const retries = engine.retryContext === 'prompt' && task.raw.max_attempts !== 1;
    if (argBytes > MAX_ARG_STRLEN) {
      out.push({
        rule: 'spec-too-long',
        severity: 'error',
        message: `${size()}; ${limit()}. The ${engine.name} engine passes the spec as one argument, so its worker cannot start (spawn E2BIG). Shorten the spec, or put the bulk (logs, data, listings) in a file in the task dir and name that file in the spec.`,
        range: spec.range,
        taskKey: task.key,
      });
    } else if (retries && argBytes + RETRY_HEADROOM_BYTES > MAX_ARG_STRLEN) {
      out.push({
        rule: 'spec-too-long',
        severity: 'warning',
        message: `${size()}, within 64 KiB of the limit: ${limit()}. A retry appends the previous failure to the spec (up to ~64 KiB), which could push it over, and that attempt could not start (spawn E2BIG). Shorten the spec, or set "max_attempts": 1.`,
        range: spec.range,
        taskKey: task.key,
      });
    }
  }
  return out;
};

/** The argv template element that carries `{spec}` (inside an optional group too), or null. */
function specElement(argv: ArgvTemplateElement[]): string | null {
  for (const element of argv.flat()) if (element.includes('{spec}')) return element;
  return null;
}

function n(bytes: number): string {
  return bytes.toLocaleString('en-US');
}
