// The machine-wide limits (an engine's `max_parallel`, a login's) with the slots live runs hold now, as the dashboard
// shows them beside `verdict runs`' line. Built from the slot tables under VERDICT_HOME/slots
// (extension/core/run/slots.ts). Pure; no Node, no DOM.

/** One limited group: an engine or a login, its limit and who holds its slots now. */
export interface SlotGroupView {
  /** The table's name: `engine-codex`, `login-openai-plus`. */
  group: string;
  /** What the limit is on: one engine (its `max_parallel`) or a login (engines sharing one subscription). */
  kind: 'engine' | 'login';
  /** The engine's or the login's name: `codex`, `openai-plus`. */
  name: string;
  /** Slots held now by runs whose orchestrator is alive. */
  inUse: number;
  /** The limit the last run to take a slot enforced (≥ 1). */
  limit: number;
  /** Who holds them: run id, task key and the engine of its attempt. */
  holders: { runId: string; task: string; engine: string }[];
}

/** One group as a line: `codex: 2 of 3 slots`, `login openai-plus: 1 of 1 slot`. */
export function slotsLine(s: SlotGroupView): string {
  return `${s.kind === 'login' ? `login ${s.name}` : s.name}: ${s.inUse} of ${s.limit} slot${s.limit === 1 ? '' : 's'}`;
}
