/**
 * Workflow `council` (docs/workflows.md "Council"): all of it is its section (section.ts), which compiles a task's
 * `council` into ordinary tasks and edges — the members' answers, their anonymous reviews, the chair's synthesis
 * (compile.ts) — and says what is wrong with one (rule.ts). It adds nothing to a run beyond those tasks.
 */
import type { Workflow } from '../workflow';
import { councilSection } from './section';

export const councilWorkflow: Workflow = { name: 'council', section: councilSection };
