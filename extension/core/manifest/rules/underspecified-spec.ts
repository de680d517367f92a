import { harnessOf, type Rule, type RuleFinding } from './document';

/** Below this many characters a spec cannot say what to build, where, and how it is checked. */
export const MIN_SPEC_CHARS = 80;
/** A reference to a document: `TASK.md`, `docs/plan.txt`. */
const DOC_FILE = /(?:^|[\s`'"(])[\w./-]*\.(?:md|markdown|txt|rst|adoc|org)\b/i;
/** Words that hand the task off to that document. */
const POINTER_VERB = /\b(?:see|read|follow|per|described in|specified in|instructions in|as in|do what|implement|complete|carry out)\b/i;
/** A pointer spec says little besides the reference. */
const MAX_POINTER_WORDS = 15;

/**
 * underspecified-spec (warning): the spec is under 80 characters, or only points at another file ("see
 * TASK.md", "follow docs/x.md"). The spec is the worker's whole brief, quoted again on the retry and kept in the
 * eval log the scoreboard is built from; a pointer hides the task from both, and in plain mode the file is not
 * even in the fresh task dir. Not for the `script` engine (harness `script`), whose spec is a script. Pointer: names a document
 * file, has a hand-off verb, and is at most 15 words. The range is the whole spec value.
 */
export const underspecifiedSpec: Rule = (doc, ctx) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const spec = task.spec;
    if (!spec || harnessOf(task, ctx) === 'script') continue;
    const text = spec.value.trim();
    const pointer = DOC_FILE.test(text) && POINTER_VERB.test(text) && text.split(/\s+/).length <= MAX_POINTER_WORDS;
    if (!pointer && text.length >= MIN_SPEC_CHARS) continue;
    out.push({
      rule: 'underspecified-spec',
      severity: 'warning',
      message: pointer
        ? 'The spec only points at another file, but the worker is briefed by the spec alone (and the eval log keeps only the spec). Write the task out: what to build, in which files, and how the check judges it.'
        : `The spec is ${text.length} character${text.length === 1 ? '' : 's'}, too short to say what to build, in which files, and how it is checked; cheap workers guess the rest. Spell those out (at least ${MIN_SPEC_CHARS} characters).`,
      range: spec.range,
      taskKey: task.key,
    });
  }
  return out;
};
