/**
 * The shape of a critic's criticism as the records hold it: a critic's record (record.ts CritiqueRecord) and the
 * critique loop's state (state.ts). Types only.
 */

/** A criticism that points at a file and line of the proposal. */
export interface LineCriticism {
  file: string;
  /** 1-based. */
  line: number;
  claim: string;
}

/** A criticism that points at a shell command that fails on the proposal. */
export interface CommandCriticism {
  command: string;
  claim: string;
}

/** One criticism as a critic gave it (schemas/critique-answer.schema.json): a file and line, or a command. */
export type Criticism = LineCriticism | CommandCriticism;

/** One criticism of one critic, after it was checked against the proposal. */
export type CheckedCriticism = Criticism & {
  /** The critic's 1-based position in `critique.critics`. */
  critic: number;
  /** It points at something checkable: a file and line that exist in the sealed tree, or a command that failed. */
  verified: boolean;
  /** Verified: what was found (the line's text; the command's exit code and output tail). Dropped: why. */
  evidence: string;
};
