/**
 * Workflow `validate` (docs/workflows.md "Validated"): all of it is its section (section.ts), which compiles a task's
 * `validate` into ordinary tasks and edges — N workers, then a validator judging their work from its inputs
 * (compile.ts) — and says what is wrong with one (rule.ts). It adds nothing to a run beyond those tasks.
 */
import type { Workflow } from '../workflow';
import { validateSection } from './section';

export const validateWorkflow: Workflow = { name: 'validate', section: validateSection };
