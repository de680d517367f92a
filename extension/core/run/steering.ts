import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Steering profiles: model-specific operating knowledge kept beside the orchestrator, in the format of Ringer's
 * docs/STEERING.md (NateBJones-Projects/ringer), format 1. One Markdown file per model, `profiles/<model-slug>.md`,
 * with front matter (`model`, `profile_version`) and one `## R<n> · <rule-id>` section per rule, whose first ```yaml
 * block gives `id`, `status` (candidate, confirmed, refuted, stale-pending-reverify) and `audience` (driver, the
 * default, or worker), and whose `**Inject:**` paragraph is the text.
 *
 * - Worker rules are prepended to the worker's prompt, the first attempt's and every retry's alike: confirmed as
 *   `- text`, candidate as `- (candidate) text` (unless VERDICT_STEERING_CANDIDATES=0), stale as `- (unverified on
 *   current model version) text`; refuted never. No qualifying rule: no block.
 * - Driver rules (how to prompt this model) are shown to the orchestrator before a run (`verdict run`, MCP start_run),
 *   never to a worker.
 * - After every attempt one observation row goes to `<dir>/observations/verdict/<UTC date>.jsonl`.
 *
 * Fail-open: a missing directory or profile is no steering; an unreadable or malformed profile is skipped and
 * reported once per run; a failed observation write is reported once; nothing here ever fails or changes a run.
 *
 * The directory: $VERDICT_STEERING_DIR, else $RINGER_STEERING_DIR (Ringer's install), else `<VERDICT_HOME>/steering`.
 */

export type RuleStatus = 'candidate' | 'confirmed' | 'refuted' | 'stale-pending-reverify';

/** One parsed rule. */
export interface SteeringRule {
  id: string;
  status: RuleStatus;
  audience: 'driver' | 'worker';
  inject: string;
}

/** One parsed profile: its slug (file name), model, version and rules in file order. */
export interface SteeringProfile {
  file: string;
  slug: string;
  model: string;
  version: string;
  rules: SteeringRule[];
}

const STATUSES: ReadonlySet<string> = new Set(['candidate', 'confirmed', 'refuted', 'stale-pending-reverify']);

/** The steering directory (absolute, `~` expanded), or null when none is set and `<home>/steering` does not exist. */
export function steeringDir(home: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env.VERDICT_STEERING_DIR || env.RINGER_STEERING_DIR;
  if (named) return path.resolve(named.startsWith('~') ? path.join(os.homedir(), named.slice(1)) : named);
  const own = path.join(home, 'steering');
  return fs.existsSync(own) ? own : null;
}

/** The profile files tried for a model, in order: the whole id as a slug, then its last path segment. */
export function profileCandidates(model: string): string[] {
  const slug = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '');
  const whole = slug(model);
  const last = slug(model.split('/').at(-1) ?? model);
  return [...new Set([whole, last].filter(Boolean))];
}

/**
 * Parses a profile's text. @throws Error saying what is wrong: no front matter, no `model`, or no rule that parses
 * (a profile with rules none of which can be read is malformed, not empty)
 */
export function parseProfile(text: string, file: string): SteeringProfile {
  const fm = /^---\r?\n([\s\S]*?)\r?\n---\r?\n/.exec(text);
  if (!fm) throw new Error('no front matter (--- … ---) at the top');
  const field = (name: string) => new RegExp(`^${name}:\\s*(.+?)\\s*$`, 'm').exec(fm[1] ?? '')?.[1]?.replace(/^["']|["']$/g, '');
  const model = field('model');
  if (!model) throw new Error('the front matter has no model');
  const version = field('profile_version') ?? '0.0.0';
  const rules: SteeringRule[] = [];
  const sections = text.slice(fm[0].length).split(/^## /m).slice(1);
  let ruleSections = 0;
  for (const section of sections) {
    if (!/^R\d+\s*[·:-]/.test(section)) continue;
    ruleSections++;
    const yaml = /```ya?ml\r?\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const get = (k: string) => new RegExp(`^${k}:\\s*(.+?)\\s*$`, 'm').exec(yaml)?.[1]?.replace(/^["']|["']$/g, '');
    const id = get('id');
    const status = get('status');
    const audience = get('audience') ?? 'driver';
    const inject = /\*\*Inject:\*\*\s*([\s\S]*?)(?:\r?\n\s*\r?\n|$)/.exec(section)?.[1]?.replace(/\s+/g, ' ').trim();
    if (!id || !status || !STATUSES.has(status) || (audience !== 'driver' && audience !== 'worker') || !inject) continue;
    rules.push({ id, status: status as RuleStatus, audience, inject });
  }
  if (ruleSections > 0 && rules.length === 0)
    throw new Error(`none of its ${ruleSections} rule section(s) parses (each needs a yaml block with id, status, audience and an **Inject:** paragraph)`);
  return { file, slug: path.basename(file, '.md'), model, version, rules };
}

/** A profile for `model` under `dir`: the profile, none (no file), or why the file found was skipped. */
export function findProfile(dir: string, model: string): { profile: SteeringProfile } | { none: true } | { skipped: string; file: string } {
  for (const slug of profileCandidates(model)) {
    const file = path.join(dir, 'profiles', `${slug}.md`);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      return { skipped: `cannot read it: ${(e as Error).message}`, file };
    }
    try {
      return { profile: parseProfile(text, file) };
    } catch (e) {
      return { skipped: (e as Error).message, file };
    }
  }
  return { none: true };
}

const LABEL: Record<RuleStatus, string | null> = {
  confirmed: '',
  candidate: '(candidate) ',
  'stale-pending-reverify': '(unverified on current model version) ',
  refuted: null,
};

/** The worker rules a prompt gets, in profile order (refuted never; candidates unless `candidates` is false). */
export function workerRules(p: SteeringProfile, candidates = true): SteeringRule[] {
  return p.rules.filter((r) => r.audience === 'worker' && r.status !== 'refuted' && (candidates || r.status !== 'candidate'));
}

/** The block prepended to a worker prompt, or '' when no worker rule qualifies. */
export function workerBlock(p: SteeringProfile, candidates = true): string {
  const rules = workerRules(p, candidates);
  if (!rules.length) return '';
  return [
    `[Steering profile ${p.model} v${p.version}, injected by Verdict]`,
    ...rules.map((r) => `- ${LABEL[r.status]}${r.inject}`),
    '[End steering profile]',
    '',
    '',
  ].join('\n');
}

/** The driver notes for the orchestrator, or [] when none. */
export function driverNotes(p: SteeringProfile): string[] {
  const rules = p.rules.filter((r) => r.audience === 'driver' && r.status !== 'refuted');
  if (!rules.length) return [];
  return [`Steering notes for ${p.model} (v${p.version}): apply when writing specs and feedback:`, ...rules.map((r) => `- (${r.status}) ${r.inject}`)];
}

/**
 * Driver notes for every distinct model of a run, before it starts, plus one line per profile skipped. Never throws.
 * @param models the tasks' models (null: the engine's default, no profile)
 */
export function driverNotesFor(home: string, models: readonly (string | null)[], env: NodeJS.ProcessEnv = process.env): string[] {
  try {
    const dir = steeringDir(home, env);
    if (!dir) return [];
    const out: string[] = [];
    for (const model of [...new Set(models.filter((m): m is string => !!m))]) {
      const found = findProfile(dir, model);
      if ('profile' in found) out.push(...driverNotes(found.profile));
      else if ('skipped' in found) out.push(`steering: skipped ${found.file}: ${found.skipped}`);
    }
    return out;
  } catch {
    return [];
  }
}

/** What one attempt was given: the profile and the rules injected (for its observation row). */
export interface Injection {
  dir: string;
  profile: SteeringProfile | null;
  rules: string[];
}

/** Per run: profiles read once, each skip and each failed observation write reported once. */
export class RunSteering {
  private readonly cache = new Map<string, { profile: SteeringProfile | null; note: string | null }>();
  private readonly reported = new Set<string>();
  private readonly byAttempt = new WeakMap<object, Injection>();

  constructor(
    readonly dir: string | null,
    private readonly note: (text: string) => void,
    private readonly candidates = true,
  ) {}

  /**
   * The prompt with the model's worker rules in front (unchanged without a profile or worker rules); remembers what
   * was injected for `attempt`'s observation. Never throws.
   */
  prompt(attempt: object, model: string | null, prompt: string): string {
    try {
      if (!this.dir || !model) return prompt;
      let entry = this.cache.get(model);
      if (!entry) {
        const found = findProfile(this.dir, model);
        entry =
          'profile' in found
            ? { profile: found.profile, note: null }
            : { profile: null, note: 'skipped' in found ? `steering: skipped ${found.file}: ${found.skipped}; the run goes on without it` : null };
        this.cache.set(model, entry);
      }
      if (entry.note) this.once(entry.note);
      if (!entry.profile) {
        this.byAttempt.set(attempt, { dir: this.dir, profile: null, rules: [] });
        return prompt;
      }
      this.byAttempt.set(attempt, {
        dir: this.dir,
        profile: entry.profile,
        rules: workerRules(entry.profile, this.candidates).map((r) => `${entry.profile!.slug}/${r.id}`),
      });
      return workerBlock(entry.profile, this.candidates) + prompt;
    } catch {
      return prompt;
    }
  }

  /** Appends the attempt's observation row (only when a steering directory is in use). Never throws. */
  observe(attempt: object, row: Record<string, unknown>, now = new Date()): void {
    if (!this.dir) return;
    const inj = this.byAttempt.get(attempt);
    try {
      const dir = path.join(this.dir, 'observations', 'verdict');
      fs.mkdirSync(dir, { recursive: true });
      const line = {
        ts: now.toISOString(),
        source: 'verdict',
        ...row,
        profile: inj?.profile?.slug ?? null,
        profile_version: inj?.profile?.version ?? null,
        rules_injected: inj?.rules ?? [],
      };
      fs.appendFileSync(path.join(dir, `${now.toISOString().slice(0, 10)}.jsonl`), JSON.stringify(line) + '\n');
    } catch (e) {
      this.once(`steering: the observation row could not be written (${(e as Error).message}); the run goes on`);
    }
  }

  private once(text: string): void {
    if (this.reported.has(text)) return;
    this.reported.add(text);
    try {
      this.note(text);
    } catch {
      // a note that cannot be shown is not a reason to stop
    }
  }
}

const runs = new WeakMap<object, RunSteering>();

/** The RunSteering of a run (keyed by its context object), made on first use. */
export function steeringOf(ctx: object, home: string, note: (text: string) => void, env: NodeJS.ProcessEnv = process.env): RunSteering {
  let s = runs.get(ctx);
  if (!s) {
    let dir: string | null = null;
    try {
      dir = steeringDir(home, env);
    } catch {
      dir = null;
    }
    s = new RunSteering(dir, note, env.VERDICT_STEERING_CANDIDATES !== '0');
    runs.set(ctx, s);
  }
  return s;
}
