/**
 * Machine-wide concurrency limits per engine and per login (a named group of engines sharing one subscription): a
 * counting semaphore under VERDICT_HOME shared by every run on the machine. Each limited group has a table
 * `<home>/slots/<group>.json` of who holds its slots (run, orchestrator pid and start time, task, engine), changed
 * only under its file lock (fs/lock.ts withLock: proper-lockfile across processes). A holder whose orchestrator is gone
 * (its pid dead, or reused: the start time differs; workdir-lock.ts holderGone) holds nothing: its slots are freed by
 * the next run that looks, so a run killed with SIGKILL never keeps a subscription's sessions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import { shortHost } from '../host/hostname';
import { processStartTime } from '../process/start-time';
import { holderGone } from './workdir-lock';

/** One slot held. Times epoch ms. */
export interface SlotHolder {
  /** Unique per acquisition (run id, pid and a counter). */
  id: string;
  runId: string;
  pid: number;
  startTime: string | null;
  host: string;
  task: string;
  engine: string;
  since: number;
}

/** A group's table as stored. */
interface SlotTable {
  /** The limit the last writer enforced (shown by `verdict runs`). */
  limit: number;
  holders: SlotHolder[];
}

/** A limited group: `engine-<name>` or `login-<name>`, and its limit (≥ 1). */
export interface SlotGroup {
  group: string;
  limit: number;
  /** How to name it to a user: `engine codex`, `login openai-plus`. */
  label: string;
}

/** A login: engines sharing one subscription, and how many of their attempts may run at once on the machine. */
export interface Login {
  engines: string[];
  maxParallel: number;
}

/** The folder of the slot tables. */
export function slotsDir(home: string): string {
  return path.join(home, 'slots');
}

/**
 * The groups an attempt on `engine` takes a slot of: the engine's own (its `max_parallel`), and each login naming it.
 * Two logins of one name (config and manifest) are one group, at the lower limit.
 */
export function groupsOf(engine: string, engineLimit: number | undefined, logins: ReadonlyMap<string, Login>): SlotGroup[] {
  const groups: SlotGroup[] = [];
  if (engineLimit !== undefined) groups.push({ group: `engine-${engine}`, limit: engineLimit, label: `engine ${engine}` });
  for (const [name, login] of logins)
    if (login.engines.includes(engine)) groups.push({ group: `login-${name}`, limit: login.maxParallel, label: `login ${name}` });
  return groups.sort((a, b) => a.group.localeCompare(b.group));
}

function readTable(file: string): SlotTable {
  try {
    const t = JSON.parse(fs.readFileSync(file, 'utf8')) as SlotTable;
    return { limit: t.limit, holders: Array.isArray(t.holders) ? t.holders : [] };
  } catch {
    return { limit: 0, holders: [] }; // none yet, or unreadable: nobody holds anything we can prove
  }
}

function writeTable(file: string, table: SlotTable): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(table, null, 1));
  fs.renameSync(tmp, file);
}

/** Holds `fn` under the locks of `groups`, taken in name order (so two runs never wait on each other in a circle). */
async function underLocks<T>(dir: string, groups: readonly SlotGroup[], fn: () => T): Promise<T> {
  if (!groups.length) return fn();
  const [first, ...rest] = groups;
  return withLock(path.join(dir, `${(first as SlotGroup).group}.json`), () => underLocks(dir, rest, fn) as Promise<T>);
}

let counter = 0;

/**
 * Takes one slot of every group at once, or none: returns the release function (idempotent, never throws), or null
 * when one of the groups has all its slots held by live runs (try again later). Dead holders are dropped on the way.
 * @throws Error when the slot folder cannot be written or a lock cannot be taken within about a minute
 */
export async function takeSlots(
  home: string,
  groups: readonly SlotGroup[],
  who: { runId: string; task: string; engine: string },
): Promise<(() => Promise<void>) | null> {
  if (!groups.length) return async () => undefined;
  const dir = slotsDir(home);
  fs.mkdirSync(dir, { recursive: true });
  const holder: SlotHolder = {
    id: `${who.runId}.${process.pid}.${++counter}`,
    runId: who.runId,
    pid: process.pid,
    startTime: processStartTime(process.pid),
    host: shortHost(),
    task: who.task,
    engine: who.engine,
    since: Date.now(),
  };
  const taken = await underLocks(dir, groups, () => {
    const tables = groups.map((g) => {
      const t = readTable(path.join(dir, `${g.group}.json`));
      return { ...t, holders: t.holders.filter((h) => !holderGone(h)) };
    });
    if (tables.some((t, i) => t.holders.length >= (groups[i] as SlotGroup).limit)) return false;
    tables.forEach((t, i) =>
      writeTable(path.join(dir, `${(groups[i] as SlotGroup).group}.json`), { limit: (groups[i] as SlotGroup).limit, holders: [...t.holders, holder] }),
    );
    return true;
  });
  if (!taken) return null;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await underLocks(dir, groups, () => {
      for (const g of groups) {
        const file = path.join(dir, `${g.group}.json`);
        const t = readTable(file);
        writeTable(file, { limit: t.limit, holders: t.holders.filter((h) => h.id !== holder.id && !holderGone(h)) });
      }
    }).catch(() => undefined);
  };
}

/** A group's slots in use now, for `verdict runs`: live holders only (read without the lock: a view, not a decision). */
export interface SlotsInUse {
  group: string;
  limit: number;
  holders: SlotHolder[];
}

/** Every slot table under `home` with its live holders, by group name; [] when none. Never throws. */
export function slotsInUse(home: string): SlotsInUse[] {
  let names: string[];
  try {
    names = fs.readdirSync(slotsDir(home)).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  return names.sort().map((n) => {
    const t = readTable(path.join(slotsDir(home), n));
    return { group: n.slice(0, -'.json'.length), limit: t.limit, holders: t.holders.filter((h) => !holderGone(h)) };
  });
}

/**
 * One run's side of the machine-wide limits: which groups an attempt on an engine takes a slot of (its engine's
 * `max_parallel`, the manifest's `logins`), and the notes said once per group when all its slots are held.
 */
export class MachineSlots {
  private readonly logins: Map<string, Login>;
  private readonly saidFull = new Set<string>();

  /**
   * @param engineLimit an engine's own machine-wide limit (EngineSpec.maxParallel), undefined for none
   * @param note shows a run note (once per group that was found full)
   * @param configLogins the user config's logins (RunOptions.logins)
   */
  constructor(
    private readonly home: string,
    private readonly runId: string,
    private readonly engineLimit: (engine: string) => number | undefined,
    logins: Record<string, { engines: string[]; maxParallel: number }> | undefined,
    private readonly note: (text: string) => void,
    configLogins?: Record<string, { engines: string[]; maxParallel: number }>,
  ) {
    this.logins = new Map(Object.entries(logins ?? {}).map(([name, l]) => [name, { engines: l.engines, maxParallel: l.maxParallel }]));
    // The user config's logins too; one of the manifest's name is the same login: both engine lists, the lower limit.
    for (const [name, l] of Object.entries(configLogins ?? {})) {
      const m = this.logins.get(name);
      this.logins.set(
        name,
        m
          ? { engines: [...new Set([...m.engines, ...l.engines])], maxParallel: Math.min(m.maxParallel, l.maxParallel) }
          : { engines: l.engines, maxParallel: l.maxParallel },
      );
    }
  }

  /** The lowest limit among the groups of `engine` (this run starts no more of its attempts at once); undefined: none. */
  limitOf(engine: string): number | undefined {
    const limits = groupsOf(engine, this.engineLimit(engine), this.logins).map((g) => g.limit);
    return limits.length ? Math.min(...limits) : undefined;
  }

  /**
   * Takes a slot of every group of `engine` for task `task`'s attempt: the release function, or null when a group is
   * full (the caller tries again later; a note names the group once). An error taking them (the slot folder cannot be
   * written) is said once and lets the attempt start: a limit must never stop a run for good.
   */
  async take(engine: string, task: string): Promise<(() => Promise<void>) | null> {
    const groups = groupsOf(engine, this.engineLimit(engine), this.logins);
    if (!groups.length) return async () => undefined;
    try {
      const release = await takeSlots(this.home, groups, { runId: this.runId, task, engine });
      if (release) return release;
    } catch (e) {
      if (!this.saidFull.has('!error')) this.note(`slots: could not take a machine-wide slot (${(e as Error).message}); attempts start without one`);
      this.saidFull.add('!error');
      return async () => undefined;
    }
    const full = groups.map((g) => g.label).join(', ');
    if (!this.saidFull.has(full)) {
      this.saidFull.add(full);
      this.note(
        `${full}: every one of ${groups.map((g) => `${g.label}'s ${g.limit}`).join(', ')} slot(s) on this machine is in use (by this or another run): ${task} and others wait for one`,
      );
    }
    return null;
  }
}
