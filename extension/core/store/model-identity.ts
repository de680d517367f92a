/**
 * The parts of a model's identity an eval row keeps apart (so the scoreboard never credits one
 * model with another's results): model, lab, harness,
 * access plan and reasoning effort are separate fields, never folded into one model string.
 */

/**
 * The reasoning effort a task asked for in its engine_args, or null: codex `-c model_reasoning_effort=high`,
 * `--reasoning-effort high` / `--reasoning-effort=high`, `--effort high`, opencode `--variant high`.
 */
export function reasoningEffortOf(engineArgs: readonly string[]): string | null {
  for (let i = 0; i < engineArgs.length; i++) {
    const a = engineArgs[i] as string;
    const kv = a.match(/^(?:model_reasoning_effort|--reasoning-effort|--effort|--variant)=(.+)$/);
    if (kv) return kv[1] as string;
    if (/^(--reasoning-effort|--effort|--variant)$/.test(a) && engineArgs[i + 1]) return engineArgs[i + 1] as string;
  }
  return null;
}

/**
 * How the model is paid for (`api`, `subscription`, `free`…): $VERDICT_ACCESS_PLAN of the run, else null. A harness
 * cannot tell from its output whether a key or a subscription served it, so it is stamped by whoever runs.
 */
export function accessPlanOf(env: NodeJS.ProcessEnv): string | null {
  return env.VERDICT_ACCESS_PLAN || null;
}
