/**
 * The containment every step (setup, worker, check) runs under. On Linux: bubblewrap (`bwrap`), one sandbox per
 * step — its own PID namespace that dies with the step, the whole filesystem read-only except the places the step
 * may write. Elsewhere, or where bwrap cannot run, there is no sandbox and the run refuses to start unless the user
 * said `--no-sandbox` (never silently unsandboxed). Source of the mount and namespace options: bwrap(1), bubblewrap
 * 0.8 (Debian 12).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { findBinary } from '../../../engines/find-binary';
import { readDirOrEmpty } from '../fs/read-dir';
import { isExecutable, resolveCommand } from './resolve-command';
import {
  boundSocketPaths,
  coveredByName,
  coveredRoots,
  HOME_SOCKET_DIRS,
  namedBacks,
  socketsToCover,
  viewOf,
  type Back,
  type CoveredRoot,
  type PathView,
  type ViewMount,
} from './sandbox-view';
import { emptyFile, looksLikeCredential, secretCovers, secretPlaces } from './secrets';

/** The containment a step ran under, as recorded in every eval row (`sandbox`). */
export type Containment = 'bwrap' | 'none';

/** What this machine offers: bubblewrap that was seen to work, or nothing, with the reason in one line. */
export type SandboxProbe = { kind: 'bwrap'; binary: string; version: string } | { kind: 'none'; reason: string };

/**
 * How a run asks for containment: `auto` (the default) uses bubblewrap and refuses to start without it; `off`
 * (`--no-sandbox`, `"sandbox": false`, the setting `verdict.sandbox`) runs every step unsandboxed, said so once.
 */
export type SandboxMode = 'auto' | 'off';

const cached = new Map<string, Promise<SandboxProbe>>();

/**
 * Finds out whether bubblewrap works here by running it once as a step would (new PID namespace, / read-only,
 * /proc and /dev). Cached for the process per VERDICT_BWRAP and PATH (what decides which bwrap is found); `fresh`
 * probes again. Never throws: the failure is the reason.
 */
export function probeSandbox(env: NodeJS.ProcessEnv = process.env, fresh = false): Promise<SandboxProbe> {
  const key = `${env.VERDICT_BWRAP ?? ''}\0${env.PATH ?? ''}`;
  let p = cached.get(key);
  if (!p || fresh) {
    p = probe(env);
    cached.set(key, p);
  }
  return p;
}

async function probe(env: NodeJS.ProcessEnv): Promise<SandboxProbe> {
  if (process.platform !== 'linux') return { kind: 'none', reason: `bubblewrap runs only on Linux (this is ${process.platform})` };
  if (env.VERDICT_BWRAP && !isExecutable(env.VERDICT_BWRAP)) return { kind: 'none', reason: `VERDICT_BWRAP=${env.VERDICT_BWRAP} is not an executable file` };
  const binary = env.VERDICT_BWRAP || findBinary('bwrap', env.PATH ?? '');
  if (!binary)
    return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora)' };
  try {
    const version = await execa(binary, ['--version'], { reject: false, timeout: 5000, stdin: 'ignore' });
    const trial = await execa(
      binary,
      ['--die-with-parent', '--unshare-user', '--unshare-pid', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'],
      { reject: false, timeout: 10_000, stdin: 'ignore', all: true },
    );
    if (trial.exitCode !== 0) {
      const why =
        String(trial.all ?? '')
          .trim()
          .split('\n')
          .pop() || `exit ${trial.exitCode ?? trial.signal}`;
      return {
        kind: 'none',
        reason: `bubblewrap is installed (${binary}) but cannot make a sandbox here: ${why} (user namespaces disabled, or an AppArmor/container policy forbids them)`,
      };
    }
    return {
      kind: 'bwrap',
      binary,
      version:
        String(version.stdout)
          .trim()
          .replace(/^bubblewrap\s*/, '') || 'unknown',
    };
  } catch (e) {
    return { kind: 'none', reason: `bubblewrap (${binary}) could not be started: ${(e as Error).message}` };
  }
}

/**
 * One step's sandbox: bubblewrap at `binary`, its own user namespace (`--unshare-user`) and no capability in it
 * (`--cap-drop ALL`: a root step could otherwise remount its read-only binds writable), a new PID namespace (`--unshare-pid`) that is gone with the step
 * (`--die-with-parent`: bwrap's init is the namespace's PID 1; when it dies the kernel kills every process in the
 * namespace, `setsid` or not), the whole filesystem read-only (`--ro-bind / /`), fresh `/proc` and `/dev`, and
 * read-write binds of exactly `writable`.
 */
export interface BwrapPlan {
  binary: string;
  /**
   * Called once the spawn helper holds the sandbox's init (pid and /proc start time): a run records it in its worker
   * journal, so that reconcile can kill an init that outlived both its bwrap and the helper (SpawnRequest.onInit).
   */
  onInit?: (init: { pid: number; startTime: string | null }) => void;
  /** Absolute folders the step may write; each must exist. Nested folders are fine (bound outermost first). */
  writable: string[];
  /**
   * true: a network namespace of the step's own (`--unshare-net`) with its own loopback and, through the user-mode
   * network stack `netstack` (slirp4netns, started by the spawn helper on the namespace before the step runs), outbound
   * access and the host's loopback as {@link HOST_LOOPBACK_ADDRESS}; without `netstack`, only its loopback (never the
   * host's namespace unasked). false: only its own loopback (127.0.0.1 and ::1). `'host'`: the host's network
   * namespace, shared with every other process (`"network": "host"`, asked for by the user).
   */
  network: boolean | 'host';
  /** The slirp4netns binary for `network: true` (a run's {@link probeNetstack}); absent: none is installed. */
  netstack?: string;
  /**
   * Private copies of state files that their CLI replaces by rename (claude's ~/.claude.json): the folder holding
   * each becomes a writable tmpfs that shows the real folder's entries read-only, with a writable copy of the file
   * (changes to the copy are dropped with the sandbox). Absolute paths; a file that does not exist is skipped.
   */
  privateFiles?: string[];
  /**
   * Files inside writable folders that stay read-only (a task's protected check inputs): bound read-only over
   * themselves after the writable binds, so writing, deleting or renaming them fails (EROFS / EBUSY). Absolute; a path
   * that does not exist is skipped.
   */
  readOnly?: string[];
  /**
   * Folders bound read-only after the hidden tmpfs and before the writable binds, so writable folders inside them stay
   * writable (a sparse tree: the task dir read-only, its cone folders writable). Absolute; must exist.
   */
  readOnlyDirs?: string[];
  /**
   * Folders whose contents the step must not even see (other tasks' worktrees and records, their ports in state.json):
   * each becomes an empty tmpfs before the writable binds, so the step's own folders inside them are bound back.
   */
  hidden?: string[];
  /**
   * true: the empty tmpfs over each `hidden` folder is made read-only once the mounts are made (the step's own folders
   * bound inside stay as they are), so the step cannot write there even to a throwaway place: a consensus group's
   * inputs engine, whose writes must land in its inputs folder alone. Absent or false: writable, gone with the sandbox.
   */
  hiddenReadOnly?: boolean;
  /**
   * Folders the step sees as its own, empty: each becomes a writable tmpfs (mode 0700, as the CLIs make their state
   * dirs) after the writable binds, gone with the sandbox (a read-only reader's engine state dirs: the sessions other
   * runs left there are not in it). Absolute; each must exist.
   */
  privateDirs?: string[];
  /**
   * Paths inside `privateDirs` bound back read-write from the host after them (an engine's login and settings). Absolute;
   * a path that does not exist is skipped.
   */
  sharedPaths?: string[];
  /**
   * Folders the step sees at another path (the red run of a phases test check, run/check-tree.ts: a throwaway tree shown at
   * the task dir's own path): every bind of the plan (`writable`, `readOnlyDirs`, `readOnly`) whose destination is
   * `at` or inside it takes its source from the same relative place under `source`. Absolute; the first match wins.
   */
  substitute?: { source: string; at: string }[];
  /**
   * Unix sockets (or folders of them) the user's config lets every step reach (`sockets`: only there, never in a
   * manifest): bound back read-only over the covers, and never covered themselves. Absolute; a path that does not
   * exist is skipped.
   */
  sockets?: string[];
  /**
   * More places no step may read, besides the user's secrets every sandbox hides (secrets.ts: ~/.ssh, ~/.aws,
   * Verdict's config…): a config's and a manifest's `hide`, the config file in force. Absolute; a missing one is skipped.
   */
  hide?: string[];
  /** Places the user's config lets every step read though they are hidden (`expose`, the config only). Absolute. */
  expose?: string[];
  /**
   * The inherited environment variables that look like credentials (secrets.ts looksLikeCredential) this step keeps:
   * its engine's own (EngineSpec.credentialEnv). Every other such variable is dropped from the step's environment.
   */
  credentialEnv?: string[];
}

/**
 * The argv that runs `file args` (cwd `cwd`, environment `env`) inside `plan`: `[plan.binary, ...]`. No unix socket of
 * the host is reachable (sandbox-view.ts): /tmp, /var/tmp and /run are empty, read-only tmpfs showing (read-only,
 * unless the plan binds them writable) only what the plan, `cwd`, `file`, `args` or a value of `env` name — never a
 * socket, /run/user, nor a tmux / ssh-agent / X11 / ICE folder; every other socket bound on the host that would still
 * show is covered with /dev/null, except in the plan's writable folders and `plan.sockets`. `files` receives the files bwrap
 * reads private copies from (`--file FD DEST`): the spawn opens them read-only as the child's fds 3, 4, … in order.
 * With `infoFd`, bwrap also gets `--info-fd <3 + files.length>` (the fd after the files, a pipe the spawn helper
 * makes: SpawnRequest.sandboxInit) and writes its init's host pid there; the helper kills that init when bwrap exits,
 * so nothing of the step outlives it even if the step traced the init (ptrace) and cleared its parent-death signal.
 * Without a process that supplies that fd (an `execa` of the argv) leave it false: bwrap would fail writing to it.
 * A read-only bind of a path onto itself that `--ro-bind / /` already shows the same way is left out
 * ({@link shownReadOnlyByRoot}); the host's socket places are covered at their real paths, once ({@link hostSocketCovers}).
 * Reads /proc/net/unix and /proc/self/mountinfo at every call (a socket bound a moment ago counts).
 *
 * What a sandbox costs (bubblewrap 0.8; test/bench/sandbox.bench.ts, CPU of every process, a 2-core VM with 20
 * mounts): a worktree worker or check sandbox around `bash -c true` ~6 ms, against ~1.4 ms for the bare bash; bwrap
 * with only its user and PID namespaces and `--ro-bind / /` ~3.6 ms. Each bind costs ~0.2 ms more (bubblewrap re-reads
 * and parses all of /proc/self/mountinfo for it, so hosts with more mounts pay more); a tmpfs ~0.1 ms. Leaving out the
 * check's repeated bind saved ~0.1 ms (1–2%, inside the noise). Kept, measured and why:
 * - `--dev /dev`, ~1.1 ms (six of those binds: null, zero, full, random, urandom, tty): bubblewrap 0.8 has no other way
 *   to a devpts of the step's own (/dev/pts, /dev/ptmx); the host's /dev/pts would let a step type into the user's
 *   terminals (TIOCSTI), the host's /dev shows every device, and fewer binds would need device nodes made with mknod
 *   (root only).
 * - `--proc /proc`, ~0.4 ms (as root two more binds, /proc/irq and /proc/bus read-only): the host's /proc would show
 *   the host's processes.
 * - `--unshare-net` (network: false), ~0.7 ms plus ~0.6 ms in the kernel's own threads (the namespace's cleanup): a
 *   new namespace per step; one reused or shared by steps would be a channel between a worker and another task's check.
 * - bwrap's init as PID 1: `--as-pid-1` would save a fork (~0.4 ms) but make the step's own command PID 1 and the
 *   holder of the parent-death signal, which it can clear (prctl) before leaving its process group: it then outlives
 *   its bwrap (seen).
 */
export function bwrapCommand(
  plan: BwrapPlan,
  cwd: string,
  file: string,
  args: string[],
  files: string[] = [],
  env: NodeJS.ProcessEnv = {},
  infoFd = false,
): { file: string; args: string[] } {
  // --unshare-user: a step started by root keeps no capability outside its own user namespace (the host's network,
  // device nodes, other processes). Inside it, though, bubblewrap leaves a root caller's capabilities in place, and the
  // sandbox's mount namespace belongs to that user namespace: with CAP_SYS_ADMIN a root step ran `mount -o
  // remount,rw,bind /` and wrote /etc, the user's checkout, anything (seen; `umount /tmp` showed the host's /tmp).
  // --cap-drop ALL: every step runs with no capability, as bubblewrap runs any other user's.
  // --unshare-cgroup-try: a cgroup namespace rooted at the step's own cgroup (a memory cap's, joined before bwrap
  // starts), so /proc/self/cgroup reads "/" and not a per-step name that told a red run from its green one (and the
  // host's cgroup layout); skipped by bwrap where the kernel has no cgroup namespaces.
  const out = ['--die-with-parent', '--unshare-user', '--unshare-pid', '--unshare-cgroup-try', '--cap-drop', 'ALL'];
  if (plan.network !== 'host') out.push('--unshare-net');
  out.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  // Every mount after those, with its destination, so that a read-only bind repeating what `--ro-bind / /` already
  // shows can be left out once all of them are known (see shownReadOnlyByRoot).
  const ops: Mount[] = [];
  const { roots, backs } = mountSocketPlaces(ops, plan, cwd, file, args, env);
  const secrets = mountSecretCovers(ops, plan, cwd, file, env);
  mountPrivateFiles(ops, plan, files);
  const hiddenDirs = mountPlanFolders(ops, plan);
  mountSocketsAndResolver(ops, plan, files, roots, backs, secrets.back);
  for (const dir of [...roots.map((r) => r.root), ...secrets.dirs, ...(plan.hiddenReadOnly ? hiddenDirs : [])]) addMount(ops, dir, '--remount-ro', dir);
  const dests = ops.map((o) => o.dest);
  for (const o of ops) {
    if (o.elidable && shownReadOnlyByRoot(o.dest, dests)) continue;
    out.push(...o.op);
  }
  // The fd after the files: the spawn helper's pipe (SpawnRequest.sandboxInit), from which it learns the init's pid.
  if (infoFd) out.push('--info-fd', String(3 + files.length));
  // And the fd after it: the spawn helper's pipe that holds the step until slirp4netns has brought its network up.
  if (infoFd && stepNetwork(plan) === 'netns') out.push('--block-fd', String(4 + files.length));
  out.push('--chdir', cwd, '--', file, ...args);
  return { file: plan.binary, args: out };
}

/** Appends one mount at `dest` (bwrap's arguments `op`) to `ops`, never left out. */
function addMount(ops: Mount[], dest: string, ...op: string[]): void {
  ops.push({ dest, op, elidable: false });
}

/**
 * The first mounts of bwrapCommand, appended to `ops`: a read-only mount does not stop connect(), a host socket is a
 * way out (sandbox-view.ts). The folders where sockets are made become empty tmpfs (read-only once the mounts are made)
 * showing back only what the step names (`plan`, `cwd`, `file`, `args`, the values of `env`); container VMs' socket
 * folders in the homes become empty. Returns the covered roots and what each shows back (for the socket covers later).
 */
function mountSocketPlaces(
  ops: Mount[],
  plan: BwrapPlan,
  cwd: string,
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { roots: CoveredRoot[]; backs: Map<string, Back[]> } {
  const roots = coveredRoots();
  const backs = namedBacks(roots, namedTexts(plan, cwd, file, args, env));
  for (const root of roots) {
    addMount(ops, root.root, '--tmpfs', root.root);
    for (const b of backs.get(root.root) ?? []) addMount(ops, b.path, ...(b.link === null ? ['--ro-bind', b.path, b.path] : ['--symlink', b.link, b.path]));
  }
  const sockets = hostSocketCovers(homeSocketDirs(env), []);
  for (const dir of sockets.dirs) addMount(ops, dir, '--tmpfs', dir);
  return { roots, backs };
}

/**
 * The user's secrets (secrets.ts), appended to `ops` after the socket places: each folder an empty tmpfs (read-only
 * once the mounts are made), each file an empty read-only file, except those `ops` already hides; what the plan binds
 * after them (the step's own folders, its engine's login) shows over them. Returns the folders covered (`dirs`) and
 * the exposed places to bind back once the plan's binds are made (`back`).
 */
function mountSecretCovers(ops: Mount[], plan: BwrapPlan, cwd: string, file: string, env: NodeJS.ProcessEnv): { dirs: string[]; back: string[] } {
  const secrets = secretCovers(
    secretPlaces(knownHomes(env), [env, process.env], plan.hide ?? [], plan.credentialEnv ?? []),
    [cwd, file, ...plan.writable, ...(plan.readOnlyDirs ?? []), ...(plan.privateDirs ?? []), ...(plan.sharedPaths ?? [])],
    plan.expose ?? [],
  );
  const shownSoFar = viewMounts(ops);
  const dirs = secrets.dirs.filter((d) => viewOf(shownSoFar, d) !== 'hidden');
  for (const dir of dirs) addMount(ops, dir, '--tmpfs', dir);
  for (const f of secrets.files) if (viewOf(shownSoFar, f) !== 'hidden') addMount(ops, f, '--ro-bind', emptyFile(), f);
  return { dirs, back: secrets.back };
}

/**
 * The plan's private files, appended to `ops`: a tmpfs over each one's folder, that folder's real entries bound back
 * read-only, and each private file given as a private copy (`--file FD`): only the copies are writable. Each copy's
 * source is appended to `files` (its fd is 2 + its place there, as bwrapCommand's spawn opens them from fd 3).
 */
function mountPrivateFiles(ops: Mount[], plan: BwrapPlan, files: string[]): void {
  for (const dir of privateFileDirs(plan.privateFiles ?? [])) {
    addMount(ops, dir, '--tmpfs', dir);
    for (const entry of readDirOrEmpty(dir)) {
      const abs = path.join(dir, entry);
      if ((plan.privateFiles ?? []).includes(abs)) continue;
      addMount(ops, abs, '--ro-bind', abs, abs);
    }
    for (const f of plan.privateFiles ?? []) {
      if (path.dirname(f) !== dir || !fs.existsSync(f)) continue;
      files.push(f);
      addMount(ops, f, '--file', String(2 + files.length), f);
    }
  }
}

/**
 * The plan's own folders, appended to `ops` in this order, each list shortest path first: `hidden` (empty tmpfs; those
 * that exist), `readOnlyDirs`, `writable`, `privateDirs` (tmpfs, mode 0700), `sharedPaths` (those that exist) and
 * `readOnly` (those whose source exists), sources taken through `plan.substitute`. Read-only binds of a path onto
 * itself are elidable. Returns the hidden folders mounted (absolute).
 */
function mountPlanFolders(ops: Mount[], plan: BwrapPlan): string[] {
  const shortestFirst = (dirs: readonly string[]) => [...new Set(dirs.map((d) => path.resolve(d)))].sort((a, b) => a.length - b.length);
  const hiddenDirs = shortestFirst(plan.hidden ?? []).filter((d) => fs.existsSync(d));
  for (const dir of hiddenDirs) addMount(ops, dir, '--tmpfs', dir);
  const from = (dest: string) => bindSource(plan.substitute ?? [], dest);
  const readOnlyBind = (dest: string) => ops.push({ dest, op: ['--ro-bind', from(dest), dest], elidable: from(dest) === dest });
  for (const dir of shortestFirst(plan.readOnlyDirs ?? [])) readOnlyBind(dir);
  for (const dir of shortestFirst(plan.writable)) addMount(ops, dir, '--bind', from(dir), dir);
  for (const dir of shortestFirst(plan.privateDirs ?? [])) addMount(ops, dir, '--perms', '0700', '--tmpfs', dir);
  for (const p of shortestFirst(plan.sharedPaths ?? [])) {
    if (fs.existsSync(p)) addMount(ops, p, '--bind', p, p);
  }
  for (const f of plan.readOnly ?? []) {
    if (fs.existsSync(from(f))) readOnlyBind(path.resolve(f));
  }
  return hiddenDirs;
}

/**
 * The last binds, appended to `ops`: the sockets the user's config lets every step reach and the exposed secret
 * places (`secretBacks`), bound back over the covers; then every other socket bound on the host that the mounts so far
 * leave shown, covered with /dev/null at its real path. A step with its own network whose host resolves names through
 * a resolver on its own loopback (systemd-resolved's 127.0.0.53) would find nothing at that address inside: it is
 * given slirp4netns's DNS forwarder instead (its file appended to `files`, read with `--ro-bind-data`).
 */
function mountSocketsAndResolver(
  ops: Mount[],
  plan: BwrapPlan,
  files: string[],
  roots: readonly CoveredRoot[],
  backs: ReadonlyMap<string, readonly Back[]>,
  secretBacks: readonly string[],
): void {
  const declared = declaredSockets(plan.sockets ?? []);
  for (const s of declared) addMount(ops, s, '--ro-bind', s, s);
  for (const e of secretBacks) addMount(ops, e, '--ro-bind', e, e);
  for (const s of socketsToCover(boundSocketPaths(), viewMounts(ops), declared, coveredByName(roots, backs))) addMount(ops, s, '--ro-bind', '/dev/null', s);
  if (stepNetwork(plan) === 'netns') {
    const resolv = stepResolvConf();
    if (resolv) {
      files.push(resolv.file);
      addMount(ops, resolv.dest, '--ro-bind-data', String(2 + files.length), resolv.dest);
    }
  }
}

/**
 * The address at which a step with a network namespace of its own (`"network": true` under a sandbox) reaches the
 * host's loopback (127.0.0.1): slirp4netns's gateway, which it maps to the host's 127.0.0.1 (its default, without
 * `--disable-host-loopback`). Steps find it in VERDICT_HOST_LOOPBACK (`127.0.0.1` for steps that share the host's
 * network), so an engine pointed at a model server on the host's loopback is configured with it.
 */
export const HOST_LOOPBACK_ADDRESS = '10.0.2.2';

/**
 * The network a step runs with, as recorded in its eval row (`network`): `netns` (its own namespace, outbound through
 * slirp4netns), `none` (its own namespace, loopback only: `"network": false`, or no stack installed), `host` (the
 * host's namespace: `"network": "host"`, or no sandbox). Pure.
 */
export type StepNetwork = 'netns' | 'none' | 'host';
export function stepNetwork(plan: Pick<BwrapPlan, 'network' | 'netstack'> | null | undefined): StepNetwork {
  if (!plan || plan.network === 'host') return 'host';
  return plan.network && plan.netstack ? 'netns' : 'none';
}

/** slirp4netns's DNS forwarder in a step's network (it forwards to the host's resolvers, loopback ones included). */
export const STEP_NAMESERVER = '10.0.2.3';

/**
 * The resolv.conf a step with its own network needs instead of the host's `text`, or null when the host's serves
 * (none of its nameservers is a loopback address, which inside the step would be the step's own): the same file with
 * every nameserver line replaced by one for {@link STEP_NAMESERVER}. Pure. Source of the format: resolv.conf(5).
 */
export function resolvConfForStep(text: string): string | null {
  const servers = [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1] as string);
  if (!servers.some((s) => /^127\./.test(s) || s === '::1')) return null;
  const rest = text.split('\n').filter((l) => !/^\s*nameserver\s/.test(l));
  return [`nameserver ${STEP_NAMESERVER}`, ...rest].join('\n').replace(/\n*$/, '\n');
}

let resolvCache: { key: string; value: { file: string; dest: string } | null } | null = null;

/**
 * The file a netns step's /etc/resolv.conf is replaced with ({@link resolvConfForStep}) and where to mount it (the
 * real path of /etc/resolv.conf: a link into /run under systemd-resolved), or null when the host's serves. Written
 * once per content into a private folder of this process. Never throws: null when it cannot be read or written.
 */
function stepResolvConf(): { file: string; dest: string } | null {
  let text: string;
  let dest: string;
  try {
    dest = fs.realpathSync('/etc/resolv.conf');
    text = fs.readFileSync(dest, 'utf8');
  } catch {
    return null;
  }
  if (resolvCache?.key === text) return resolvCache.value;
  const want = resolvConfForStep(text);
  let value: { file: string; dest: string } | null = null;
  if (want !== null) {
    try {
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-resolv-')), 'resolv.conf');
      fs.writeFileSync(file, want, { mode: 0o644 });
      value = { file, dest };
    } catch {
      value = null;
    }
  }
  resolvCache = { key: text, value };
  return value;
}

/** What this machine offers for steps' own networks: slirp4netns found and seen to start, or why not, in one line. */
export type NetstackProbe = { kind: 'slirp4netns'; binary: string; version: string } | { kind: 'none'; reason: string };

const netstackCache = new Map<string, Promise<NetstackProbe>>();

/**
 * Finds slirp4netns (VERDICT_SLIRP4NETNS, else on PATH) and checks it can run here: `--version` answers and /dev/net/tun
 * can be opened for reading and writing (slirp4netns opens it inside the step's user namespace with this user's
 * rights on the host's device node: a container that makes it 0600 root-only stops every unprivileged step's network;
 * `chmod 0666 /dev/net/tun`, as a host's udev makes it, fixes that). Cached per VERDICT_SLIRP4NETNS and PATH; `fresh`
 * probes again. Never throws.
 */
export function probeNetstack(env: NodeJS.ProcessEnv = process.env, fresh = false): Promise<NetstackProbe> {
  const key = `${env.VERDICT_SLIRP4NETNS ?? ''}\0${env.PATH ?? ''}`;
  let p = netstackCache.get(key);
  if (!p || fresh) {
    p = probeSlirp(env);
    netstackCache.set(key, p);
  }
  return p;
}

async function probeSlirp(env: NodeJS.ProcessEnv): Promise<NetstackProbe> {
  if (process.platform !== 'linux') return { kind: 'none', reason: `slirp4netns runs only on Linux (this is ${process.platform})` };
  if (env.VERDICT_SLIRP4NETNS !== undefined && !isExecutable(env.VERDICT_SLIRP4NETNS))
    return { kind: 'none', reason: `VERDICT_SLIRP4NETNS=${env.VERDICT_SLIRP4NETNS} is not an executable file` };
  const binary = env.VERDICT_SLIRP4NETNS || findBinary('slirp4netns', env.PATH ?? '');
  if (!binary) return { kind: 'none', reason: 'slirp4netns is not installed: apt-get install slirp4netns (Debian/Ubuntu) or dnf install slirp4netns (Fedora)' };
  try {
    fs.accessSync('/dev/net/tun', fs.constants.R_OK | fs.constants.W_OK);
  } catch (e) {
    return {
      kind: 'none',
      reason: `slirp4netns is installed (${binary}) but /dev/net/tun cannot be opened (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): as root, \`mkdir -p /dev/net && mknod -m 0666 /dev/net/tun c 10 200\` where it is missing, \`chmod 0666 /dev/net/tun\` where it is root's only`,
    };
  }
  try {
    const version = await execa(binary, ['--version'], { reject: false, timeout: 5000, stdin: 'ignore' });
    if (version.exitCode !== 0) return { kind: 'none', reason: `slirp4netns (${binary}) does not run: exit ${version.exitCode ?? version.signal}` };
    return { kind: 'slirp4netns', binary, version: /version\s+(\S+)/.exec(String(version.stdout))?.[1] ?? 'unknown' };
  } catch (e) {
    return { kind: 'none', reason: `slirp4netns (${binary}) could not be started: ${(e as Error).message}` };
  }
}

/** One mount operation of a sandbox: bwrap's arguments for it and the path it mounts at. */
interface Mount {
  dest: string;
  op: string[];
  /** A read-only bind of a path onto itself: left out when `--ro-bind / /` already shows that path the same way. */
  elidable: boolean;
}

/**
 * True when a read-only bind of `dest` onto itself would only repeat `--ro-bind / /`: `dest` is its own real path (no
 * symbolic link on the way, so the path names the same object inside and out) and no other mount of the sandbox
 * (`dests`: /dev, /proc, /tmp, a hidden or writable folder, a tmpfs, another bind…) is at it, above it (it would
 * change what `dest` shows) or inside it (the bind, made after it, would cover it). `/` shows every host mount
 * read-only, nosuid and nodev, exactly as the bind of `dest` would; each bind costs bubblewrap a re-read of the whole
 * mount table (~0.2 ms of CPU on a host with 20 mounts, more with more). Never throws: a path it cannot resolve keeps
 * its bind.
 */
export function shownReadOnlyByRoot(dest: string, dests: readonly string[]): boolean {
  const abs = path.resolve(dest);
  if (abs === '/') return false;
  try {
    if (fs.realpathSync(abs) !== abs) return false;
  } catch {
    return false;
  }
  const related = (a: string, b: string) => a === b || a.startsWith(b === '/' ? '/' : `${b}/`) || b.startsWith(`${a}/`);
  let self = 0;
  for (const d of ['/dev', '/proc', ...dests]) {
    const other = path.resolve(d);
    if (other === abs && self++ === 0) continue; // its own entry, once
    if (related(abs, other)) return false;
  }
  return true;
}

/** Where a bind to `dest` takes its source from: `dest` itself, or its place under the first substitute that holds it. Pure. */
export function bindSource(substitute: readonly { source: string; at: string }[], dest: string): string {
  const abs = path.resolve(dest);
  for (const s of substitute) {
    const at = path.resolve(s.at);
    if (abs === at) return path.resolve(s.source);
    if (abs.startsWith(at + path.sep)) return path.join(path.resolve(s.source), abs.slice(at.length + 1));
  }
  return abs;
}

/**
 * The host's socket folders (each to become an empty tmpfs) and socket files (each covered by /dev/null) that exist
 * here, as the places to mount at: each at its real path, once. bubblewrap cannot make a mount point through a
 * symbolic link (/var/run is one to /run almost everywhere: `--ro-bind /dev/null /var/run/docker.sock` failed every
 * step on a host with docker, "Can't create file at /var/run/docker.sock"), and one mount covers every name of a
 * place; a file inside a covered folder needs nothing more. Never throws.
 */
export function hostSocketCovers(dirs: readonly string[], files: readonly string[]): { dirs: string[]; files: string[] } {
  const real = (p: string, want: (st: fs.Stats) => boolean): string | null => {
    // Most of these places do not exist: existsSync answers without building an error (an exception per missing
    // place was most of this function's cost, and it runs for every step).
    if (!fs.existsSync(p)) return null;
    try {
      const r = fs.realpathSync.native(p);
      return want(fs.statSync(r)) ? r : null;
    } catch {
      return null;
    }
  };
  const outDirs = [...new Set(dirs.map((d) => real(d, (st) => st.isDirectory())).filter((d): d is string => d !== null))];
  const inside = (f: string) => outDirs.some((d) => f.startsWith(`${d}/`));
  const outFiles = [...new Set(files.map((f) => real(f, () => true)).filter((f): f is string => f !== null && !inside(f)))];
  return { dirs: outDirs, files: outFiles };
}

/**
 * The homes a step's sandbox treats as the user's: the step's `HOME`, this process's and the account's (passwd), each
 * absolute, once. A run started with another HOME (a test, a CI job) still has the account's sockets and secrets
 * under the real one. Never throws.
 */
export function knownHomes(env: NodeJS.ProcessEnv): string[] {
  if (accountHome === undefined) {
    try {
      accountHome = os.userInfo().homedir || null;
    } catch {
      accountHome = null;
    }
  }
  return [
    ...new Set(
      [env.HOME, process.env.HOME, accountHome]
        .filter((h): h is string => typeof h === 'string' && path.isAbsolute(h) && path.resolve(h) !== '/')
        .map((h) => path.resolve(h)),
    ),
  ];
}
let accountHome: string | null | undefined;

/** What keeps the host's sockets out of every step's reach on this machine now (`verdict doctor`). */
export interface SocketCoverReport {
  /** The folders every sandbox covers with an empty tmpfs, showing only what a step names (real paths). */
  folders: string[];
  /** Container VMs' socket folders under the homes, each an empty tmpfs (those that exist). */
  homeFolders: string[];
  /** Socket files of sockets bound on this host now (this network namespace's table, and sockets mounted on the filesystem). */
  bound: number;
  /** Those that would show in a step's view outside the covered folders: each covered with /dev/null where it lies. */
  covered: string[];
  /** The config's `sockets` (absolute), bound back into every step. */
  declared: string[];
}

/**
 * {@link SocketCoverReport} for a step with the environment `env` that names nothing under the covered folders, with
 * the config's declared sockets (absolute). Never throws.
 */
export function socketCoverReport(env: NodeJS.ProcessEnv, declared: readonly string[]): SocketCoverReport {
  const roots = coveredRoots();
  const homeFolders = hostSocketCovers(homeSocketDirs(env), []).dirs;
  const bound = boundSocketPaths();
  const mounts: ViewMount[] = [
    ...roots.map((r) => ({ dest: r.root, view: 'hidden' as const })),
    ...homeFolders.map((d) => ({ dest: d, view: 'hidden' as const })),
  ];
  const covered = socketsToCover(bound, mounts, declaredSockets(declared), coveredByName(roots, new Map()));
  const isSocket = (p: string) => {
    try {
      return fs.lstatSync(p).isSocket();
    } catch {
      return false;
    }
  };
  return { folders: roots.map((r) => r.root), homeFolders, bound: bound.filter(isSocket).length, covered, declared: [...declared] };
}

/** What every sandboxed step cannot read of the user's secrets on this machine now (`verdict doctor`). */
export interface SecretsReport {
  /** The secret places that exist here, each hidden (real paths): folders and files. */
  hidden: string[];
  /** The config's `expose` that exist here: shown to every step after all. */
  exposed: string[];
  /** The names of this environment's variables that no step inherits (those an engine declares reach its own steps). */
  droppedEnv: string[];
}

/**
 * {@link SecretsReport} for the environment `env` with the config's `hide` and `expose` and the config file in force
 * (absolute). Never throws.
 */
export function secretsReport(env: NodeJS.ProcessEnv, hide: readonly string[], expose: readonly string[]): SecretsReport {
  const covers = secretCovers(secretPlaces(knownHomes(env), [env], hide), [], expose);
  const droppedEnv = Object.entries(env)
    .filter(([k, v]) => v !== undefined && looksLikeCredential(k, v))
    .map(([k]) => k)
    .sort();
  return { hidden: [...covers.dirs, ...covers.files].sort(), exposed: expose.filter((e) => fs.existsSync(e)), droppedEnv };
}

/** The container VMs' socket folders ({@link HOME_SOCKET_DIRS}) under every known home. */
function homeSocketDirs(env: NodeJS.ProcessEnv): string[] {
  return knownHomes(env).flatMap((h) => HOME_SOCKET_DIRS.map((d) => path.join(h, d)));
}

/**
 * The texts whose absolute paths under a covered folder a step is shown ({@link namedBacks}): the plan's paths, `cwd`,
 * the command and its real path, the arguments, the environment's values, the real paths of PATH's folders and of
 * the `node` found there (an engine CLI is a node script; node or the CLI may be a link into /var/tmp), and the real
 * path of /etc/resolv.conf (a link into /run under systemd-resolved and NetworkManager).
 */
function namedTexts(plan: BwrapPlan, cwd: string, file: string, args: string[], env: NodeJS.ProcessEnv): string[] {
  const real = (p: string): string => {
    try {
      return fs.realpathSync.native(p);
    } catch {
      return '';
    }
  };
  const out = [
    ...plan.writable,
    ...(plan.readOnlyDirs ?? []),
    ...(plan.readOnly ?? []),
    ...(plan.privateFiles ?? []),
    ...(plan.hidden ?? []),
    ...(plan.privateDirs ?? []),
    ...(plan.sharedPaths ?? []),
    cwd,
    file,
  ].map((p) => path.resolve(p));
  out.push(real(file), ...args);
  for (const v of Object.values(env)) if (v) out.push(v);
  out.push(...pathReals(env.PATH ?? '', real));
  out.push(real('/etc/resolv.conf'));
  return out;
}

const pathRealsCache = new Map<string, string[]>();

/**
 * The real paths of PATH's folders and of the `node` found there, remembered per PATH for the process (a PATH holds
 * ten or more folders; resolving them at every step cost ~50 µs). A link swapped mid-run is seen by the next process.
 */
function pathReals(pathEnv: string, real: (p: string) => string): string[] {
  let out = pathRealsCache.get(pathEnv);
  if (!out) {
    out = pathEnv
      .split(':')
      .filter((d) => path.isAbsolute(d))
      .map(real);
    const node = resolveCommand('node', pathEnv);
    if (node) out.push(real(node));
    pathRealsCache.set(pathEnv, out);
  }
  return out;
}

/** The sockets a config declares (`sockets`), at their real paths, those that exist. */
function declaredSockets(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    if (!path.isAbsolute(p) || !fs.existsSync(p)) continue;
    try {
      out.add(fs.realpathSync.native(p));
    } catch {
      // gone
    }
  }
  return [...out];
}

/** The sandbox's mounts as {@link socketsToCover} reads them: /dev and /proc are the step's own, then each mount's effect. */
function viewMounts(ops: readonly Mount[]): ViewMount[] {
  const out: ViewMount[] = [
    { dest: '/dev', view: 'hidden' },
    { dest: '/proc', view: 'hidden' },
  ];
  for (const o of ops) {
    const kind = o.op[0];
    if (kind === '--remount-ro') continue;
    // A bind whose source is another place (a substitute) shows that place, not what lies at its destination.
    const view: PathView = kind === '--bind' ? 'own' : kind === '--ro-bind' && o.op[1] === o.dest ? 'shown' : 'hidden';
    out.push({ dest: o.dest, view });
  }
  return out;
}

/**
 * Environment variables that point a step at the user's own agents and sessions (ssh-agent, the D-Bus session bus,
 * tmux, VS Code's IPC, the display): removed from every sandboxed step's environment.
 */
export const SESSION_ENV = [
  'SSH_AUTH_SOCK',
  'SSH_AGENT_PID',
  'DBUS_SESSION_BUS_ADDRESS',
  'TMUX',
  'TMUX_PANE',
  'STY',
  'VSCODE_IPC_HOOK',
  'VSCODE_IPC_HOOK_CLI',
  'VSCODE_GIT_IPC_HANDLE',
  'DISPLAY',
  'WAYLAND_DISPLAY',
  'XAUTHORITY',
  'GPG_AGENT_INFO',
  'XDG_RUNTIME_DIR',
  'DOCKER_HOST',
];

function privateFileDirs(files: string[]): string[] {
  return [...new Set(files.filter((f) => fs.existsSync(f)).map((f) => path.dirname(f)))];
}

/**
 * Expands an engine's declared state path: `~` at the start is `home`, `${VAR:-fallback}` is VAR when set and
 * non-empty else the fallback (itself expanded), `$VAR` / `${VAR}` is VAR; `UID` is this process's user id when the
 * environment does not set it (shells do not export it). Returns null when a variable without a fallback is unset
 * (the path is then not declared for this environment).
 */
export function expandStatePath(template: string, env: NodeJS.ProcessEnv, home: string): string | null {
  if (env.UID === undefined && process.getuid) env = { ...env, UID: String(process.getuid()) };
  let missing = false;
  const expanded = template.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_m, braced: string | undefined, fallback: string | undefined, bare: string | undefined) => {
      const value = env[(braced ?? bare) as string];
      if (value) return value;
      if (fallback !== undefined) return expandStatePath(fallback, env, home) ?? '';
      missing = true;
      return '';
    },
  );
  if (missing || !expanded) return null;
  const withHome = expanded === '~' ? home : expanded.startsWith('~/') ? path.join(home, expanded.slice(2)) : expanded;
  return path.isAbsolute(withHome) ? path.resolve(withHome) : null;
}

/**
 * The device nodes bubblewrap's `--dev` binds from the host into every sandbox. They are the host's own inodes, and a
 * step running as root owns them: `chmod 600 /dev/null` inside would change the host's (bubblewrap 0.8 can bind them
 * read-only only without device access). Their modes and owners are read once and put back after every sandboxed
 * step ({@link restoreDevNodes}).
 */
const DEV_NODES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];
const devModes = new Map<string, { mode: number; uid: number; gid: number }>();
for (const node of DEV_NODES) {
  try {
    const st = fs.statSync(node);
    // Every one of them is read-write for all on a sound system; a node already damaged is not taken as the reference.
    devModes.set(node, { mode: (st.mode & 0o7777) | 0o666, uid: st.uid, gid: st.gid });
  } catch {
    // absent here
  }
}

/**
 * Puts the host's device nodes back as they were before any step ran, when a step changed their mode or owner (only
 * a step running as root can). Returns the nodes it repaired. Never throws.
 */
export function restoreDevNodes(): string[] {
  const repaired: string[] = [];
  for (const [node, want] of devModes) {
    try {
      const st = fs.statSync(node);
      if ((st.mode & 0o7777) !== want.mode) fs.chmodSync(node, want.mode);
      if (st.uid !== want.uid || st.gid !== want.gid) fs.chownSync(node, want.uid, want.gid);
      if ((st.mode & 0o7777) !== want.mode || st.uid !== want.uid || st.gid !== want.gid) repaired.push(node);
    } catch {
      // not ours to repair
    }
  }
  return repaired;
}
