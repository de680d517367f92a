/**
 * Expanding an engine's argv template (see ArgvTemplateElement in ./types) into the argv of one attempt.
 * The result goes straight to spawn without a shell, so every value stays exactly the argv element it was
 * put in: a spec with spaces, quotes or `$(...)` is one element and is never interpreted.
 */
import type { ArgvTemplateElement, EngineSpec } from './types';

/** Placeholders replaced inside a string element. */
const VALUE_PLACEHOLDERS = ['spec', 'taskdir', 'model'] as const;
/** Placeholders that must be a whole top-level element; each expands to zero or more elements. */
const LIST_PLACEHOLDERS = ['{engine_args}', '{access}'] as const;

type ValueName = (typeof VALUE_PLACEHOLDERS)[number];

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Values for one attempt's argv. */
export interface ArgvValues {
  /** The full prompt for the worker (spec, plus failure context on a retry). */
  spec: string;
  /** Absolute task directory. */
  taskdir: string;
  /** The task's model; null means the engine's defaultModel, and with that also null the model is unset. */
  model: string | null;
  /** The task's `engine_args`, inserted where the template says `{engine_args}`. */
  engineArgs: string[];
  /** The task's `full_access`: picks fullAccessArgv or sandboxArgv for `{access}`. */
  fullAccess: boolean;
  /** The worker runs inside Verdict's own sandbox: `{access}` also gets the engine's `nestedSandboxArgv`. */
  nested?: boolean;
  /**
   * With `nested`: Verdict runs as root, so its sandbox leaves the worker no capability and the engine's own sandbox
   * cannot start inside it; `{access}` is the engine's `rootNestedArgv` when it has one (EngineSpec).
   */
  root?: boolean;
}

/** One thing wrong with a template: where (`argv[3]`, `argv[4][1]`) and what. */
export interface TemplateProblem {
  path: string;
  message: string;
}

function isList(element: string): boolean {
  return (LIST_PLACEHOLDERS as readonly string[]).includes(element);
}

function isValueName(name: string): name is ValueName {
  return (VALUE_PLACEHOLDERS as readonly string[]).includes(name);
}

function placeholdersIn(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}

function stringProblems(text: string, path: string, inGroup: boolean): TemplateProblem[] {
  if (isList(text)) {
    return inGroup ? [{ path, message: `${text} must be a top-level element, not inside an optional group` }] : [];
  }
  return placeholdersIn(text)
    .filter((name) => !isValueName(name))
    .map((name) =>
      isList(`{${name}}`)
        ? { path, message: `{${name}} must be a whole element on its own, not part of "${text}"` }
        : { path, message: `unknown placeholder {${name}} (known: {spec} {taskdir} {model} {engine_args} {access})` },
    );
}

/**
 * Checks a template without expanding it: unknown placeholders, `{engine_args}` / `{access}` that are not a
 * whole top-level element, and nested groups. Returns the problems found (empty when the template is valid).
 */
export function templateProblems(argv: ArgvTemplateElement[]): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  argv.forEach((element, i) => {
    if (typeof element === 'string') {
      problems.push(...stringProblems(element, `argv[${i}]`, false));
      return;
    }
    element.forEach((inner, j) => {
      if (typeof inner !== 'string') problems.push({ path: `argv[${i}][${j}]`, message: 'optional groups cannot be nested' });
      else problems.push(...stringProblems(inner, `argv[${i}][${j}]`, true));
    });
  });
  return problems;
}

function substitute(text: string, values: Record<ValueName, string | null>): string {
  // One pass with a callback: a value that itself contains `{model}` or `{spec}` is never expanded again.
  return text.replace(PLACEHOLDER, (_match, name: string) => values[name as ValueName] ?? '');
}

function hasAllValues(text: string, values: Record<ValueName, string | null>): boolean {
  return placeholdersIn(text).every((name) => values[name as ValueName] !== null);
}

/**
 * Builds the argv (after the binary) for one attempt from `spec.argv`:
 * - `{spec}`, `{taskdir}`, `{model}` inside a string are replaced by their value (one pass, never re-scanned);
 * - `{engine_args}` and `{access}` standing alone expand to `values.engineArgs` and to `spec.fullAccessArgv` or
 *   `spec.sandboxArgv` (zero or more elements);
 * - an array is an optional group, kept only when every placeholder in it has a value (model null with no
 *   defaultModel drops `["-m", "{model}"]`).
 * @throws Error when the template is invalid (see templateProblems), or when a top-level element needs a value
 *   that is missing (a `{model}` outside an optional group with no model and no default).
 */
export function expandArgv(spec: EngineSpec, values: ArgvValues): string[] {
  const problems = templateProblems(spec.argv);
  if (problems.length > 0) {
    throw new Error(`engine "${spec.name}": ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  }
  const known: Record<ValueName, string | null> = {
    spec: values.spec,
    taskdir: values.taskdir,
    model: values.model ?? spec.defaultModel,
  };
  const argv: string[] = [];
  spec.argv.forEach((element, i) => {
    if (Array.isArray(element)) {
      if (element.every((inner) => hasAllValues(inner, known))) argv.push(...element.map((inner) => substitute(inner, known)));
    } else if (element === '{engine_args}') {
      argv.push(...values.engineArgs);
    } else if (element === '{access}') {
      argv.push(...accessArgv(spec, values));
    } else if (!hasAllValues(element, known)) {
      throw new Error(`engine "${spec.name}": argv[${i}] "${element}" needs a value that is not set (no model given and no default model)`);
    } else {
      argv.push(substitute(element, known));
    }
  });
  return argv;
}

/** What `{access}` stands for: full access, the engine's own sandbox (nested in Verdict's or not), or, nested under root, rootNestedArgv. */
function accessArgv(spec: EngineSpec, values: ArgvValues): string[] {
  if (values.fullAccess) return spec.fullAccessArgv;
  if (values.nested && values.root && spec.rootNestedArgv) return spec.rootNestedArgv;
  return [...spec.sandboxArgv, ...(values.nested ? spec.nestedSandboxArgv : [])];
}
