import { findNodeAtLocation, type Node } from 'jsonc-parser';
import type { LintDocument, LintTask, Rule, RuleFinding } from './document';

/**
 * self-review (warning): a reviewer (the task's `review.engines`, else the run's `review.engines`) that is the task's
 * own engine with the same model — the model that did the work judging it, which tends to approve its own mistakes.
 * Models compare as written (absent: the engine's default, so two absent models are the same). Only the first
 * attempt's engine is compared (a `fallback` attempt's reviewer may well be that engine). The range is the entry.
 * The task's critics (`critique.critics`) are held to the same rule, and a consensus group's inputs engine when every
 * candidate runs on its engine and model.
 */
export const selfReview: Rule = (doc) => {
  const out: RuleFinding[] = [];
  const runEngines = findNodeAtLocation(doc.root, ['review', 'engines']);
  for (const task of doc.tasks) {
    const model = task.model?.value ?? null;
    const own = findNodeAtLocation(task.node, ['review', 'engines']);
    const engines = task.raw.review === false ? undefined : (own ?? runEngines);
    for (const entry of engines?.type === 'array' ? (engines.children ?? []) : []) {
      const { engine, model: reviewerModel } = choiceOf(entry);
      if (engine !== task.engine || reviewerModel !== model) continue;
      out.push({
        rule: 'self-review',
        severity: 'warning',
        message: `This reviewer is the task's own engine and model (${engine}${model ? `/${model}` : ''}${own ? '' : ', from the run-level review'}): the model that did the work would judge it. Review with another model or engine.`,
        range: doc.index.range(entry.offset, entry.length),
        taskKey: task.key,
      });
    }
    // A critic that is the worker's own engine and model criticises its own work, as such a reviewer would.
    const critics = findNodeAtLocation(task.node, ['critique', 'critics']);
    for (const entry of critics?.type === 'array' ? (critics.children ?? []) : []) {
      const { engine, model: criticModel } = choiceOf(entry);
      if (engine !== task.engine || criticModel !== model) continue;
      out.push({
        rule: 'self-review',
        severity: 'warning',
        message: `This critic is the task's own engine and model (${engine}${model ? `/${model}` : ''}): the model that did the work would criticise it. Criticise with another model or engine.`,
        range: doc.index.range(entry.offset, entry.length),
        taskKey: task.key,
      });
    }
    const inputs = inputsEngineFinding(doc, task);
    if (inputs) out.push(inputs);
  }
  return out;
};

/**
 * A consensus group's inputs engine (`distinguish.inputs` as `{engine, model}`) that is the engine and model of every
 * one of its candidates (`candidates` entries, else the task's own): the model that wrote them would write the inputs
 * that split them, and it tends not to look where it went wrong itself, so candidates sharing a mistake agree on its
 * inputs. Null otherwise.
 */
function inputsEngineFinding(doc: LintDocument, task: LintTask): RuleFinding | null {
  const entry = findNodeAtLocation(task.node, ['distinguish', 'inputs']);
  if (entry?.type !== 'object') return null;
  const { engine, model } = choiceOf(entry);
  if (engine === null) return null;
  const listed = findNodeAtLocation(task.node, ['candidates']);
  const writers =
    listed?.type === 'array' && listed.children?.length ? listed.children.map(choiceOf) : [{ engine: task.engine, model: task.model?.value ?? null }];
  if (!writers.every((w) => w.engine === engine && w.model === model)) return null;
  return {
    rule: 'self-review',
    severity: 'warning',
    message: `This inputs engine is the engine and model of every candidate (${engine}${model ? `/${model}` : ''}): the model that wrote them would write the inputs that tell them apart, and candidates sharing its mistake would agree on them. Write inputs with another model or engine.`,
    range: doc.index.range(entry.offset, entry.length),
    taskKey: task.key,
  };
}

/** A review entry's engine and model (null: the engine's default). */
function choiceOf(entry: Node): { engine: string | null; model: string | null } {
  if (entry.type === 'string') return { engine: String(entry.value), model: null };
  const engine = findNodeAtLocation(entry, ['engine']);
  const model = findNodeAtLocation(entry, ['model']);
  return { engine: engine?.type === 'string' ? String(engine.value) : null, model: model?.type === 'string' ? String(model.value) : null };
}
