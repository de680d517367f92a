/**
 * The default steps of an attempt, in order (docs/attempt.md "The steps"): prepare, inputs (tasks with `inputs` only), work, seal, guard, check,
 * suite (tasks with a `suite` only: the full regression check on the sealed tree), review (only for tasks with `review`),
 * deliver. Workflow plugins add their own steps between these (run/workflows/index.ts ATTEMPT_STEPS: an attempt's
 * full list).
 */
import type { Step } from './context';
import { prepareStep } from './prepare';
import { workStep } from './work';
import { sealStep } from './seal';
import { checkStep } from './check';
import { guardStep } from './guard';
import { deliverStep } from './deliver';
import { reviewStep } from './review';
import { inputsStep } from './inputs';
import { suiteStep } from './suite';

export const DEFAULT_STEPS: readonly Step[] = [prepareStep, inputsStep, workStep, sealStep, guardStep, checkStep, suiteStep, reviewStep, deliverStep];
