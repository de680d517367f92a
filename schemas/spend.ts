/**
 * A run's spend as every view shows it (state.json `spend`, the dashboard's RunView, `verdict runs RUN`, the runs tree),
 * and the one line they all print. Written by the orchestrator (extension/core/run/spend.ts RunSpend.snapshot) as
 * attempts, reviewers and critics are admitted, report usage and end.
 */
export interface RunSpendState {
  /** Settled spend plus what running attempts reported so far, integer micro-USD (an unknown cost counts its reservation). */
  spentMicroUsd: number;
  /** What running attempts hold beyond what they reported (each its worst-case reservation), micro-USD. */
  reservedMicroUsd: number;
  /** The manifest's budget_usd in micro-USD; null without one. */
  budgetMicroUsd: number | null;
}

/** Micro-USD → "$0.0123" (four decimals under $1, else two). */
function usd(micro: number): string {
  const v = micro / 1e6;
  return `$${v < 1 ? v.toFixed(4) : v.toFixed(2)}`;
}

/**
 * The spend as one line: `spent $0.0012 · reserved $0.0040 · budget $0.0100 (52 %)` (the share is spent plus reserved
 * of the budget, rounded down); without a budget `spent $0.0012 · reserved $0.0040`; a zero reservation is left out.
 * null when there is nothing to show: no spend state (a run older than the field), or no budget and nothing spent or held
 * (a run of scripts, whose cost is unknown: `spent $0.0000` would read as free).
 */
export function spendLine(s: RunSpendState | undefined | null): string | null {
  if (!s || (s.budgetMicroUsd === null && s.spentMicroUsd === 0 && s.reservedMicroUsd === 0)) return null;
  const parts = [`spent ${usd(s.spentMicroUsd)}`];
  if (s.reservedMicroUsd > 0) parts.push(`reserved ${usd(s.reservedMicroUsd)}`);
  if (s.budgetMicroUsd !== null) parts.push(`budget ${usd(s.budgetMicroUsd)} (${Math.floor(((s.spentMicroUsd + s.reservedMicroUsd) / s.budgetMicroUsd) * 100)} %)`);
  return parts.join(' · ');
}
