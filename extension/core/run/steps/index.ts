/** The default steps of an attempt, in order (DESIGN.md "One attempt"): prepare, work, seal, check, deliver. */
import type { Step } from './context';
import { prepareStep } from './prepare';
import { workStep } from './work';
import { sealStep } from './seal';
import { checkStep } from './check';
import { deliverStep } from './deliver';

export const DEFAULT_STEPS: readonly Step[] = [prepareStep, workStep, sealStep, checkStep, deliverStep];
