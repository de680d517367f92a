/**
 * What a sandboxed step sees of the host's sockets (sandbox.ts `bwrapCommand` builds the mounts from it). A read-only
 * bind does not stop `connect()`, and a unix socket of the host's is a way out of every sandbox: docker's is root on
 * the host, the D-Bus buses and systemd's own sockets start commands outside, ssh-agent and gpg-agent sign as the user.
 * So, in every sandbox:
 * - the folders where sockets are made at any time — `/tmp`, `/var/tmp`, `/run` (and `/var/run` where it is not a
 *   link to it) — are each an empty tmpfs, read-only once the mounts are made, showing back only what the step names
 *   ({@link coveredRoots}, {@link namedBacks}): in the temporary folders the named first-level entry (a test clone, a
 *   tool), in `/run` the named path itself (a checkout on removable media, /etc/resolv.conf's target), never
 *   `/run/user`, a socket, or a tmux / ssh-agent / X11 / ICE / systemd-private folder;
 * - a few folders of `$HOME` that hold the sockets of container VMs ({@link HOME_SOCKET_DIRS}) are empty tmpfs;
 * - every socket bound on the host when the step starts ({@link boundSocketPaths}: the kernel's table of this network
 *   namespace's unix sockets, and sockets a bind mount put on the filesystem) that would still show in the step's
 *   view, wherever it lies (`$HOME`, `/var/lib`, `/srv`, the user's checkout), is covered with /dev/null
 *   ({@link socketsToCover}) — except in the step's own writable folders and in what the user's config declares
 *   (`sockets`).
 * Why not `find -type s` over the disk: 9.2 s cold and 1.8 s warm for / on the CI machine, 0.67 s for a home of
 * 277,000 files, per step; and a socket made after the scan would be missed anyway. Why not a view made only of what a
 * step needs: the user's toolchains (rustup, nvm, pyenv, ~/.m2, Go's module cache) live in `$HOME` and are named
 * nowhere, so every such check would break. Source of the table's format: proc(5), /proc/net/unix; of mountinfo's:
 * proc(5), /proc/pid/mountinfo.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A folder covered by an empty tmpfs in every sandbox (read-only once the mounts are made). */
export interface CoveredRoot {
  /** Its real path: the mount point. */
  root: string;
  /** The absolute names it is known by in text (`/run/`, `/var/run/` when that links to it), each with a trailing slash. */
  names: string[];
  /** `entry`: a named path shows its whole first-level entry (a temporary folder); `exact`: only the named path itself. */
  mode: 'entry' | 'exact';
  /** Paths relative to the root that are never shown, even when named (tested on the whole relative path). */
  never: RegExp;
}

/** Socket folders of a temporary folder never shown: the user's tmux, ssh-agent, X11, ICE, XIM, font and services' private folders. */
const TEMP_NEVER = /^(tmux-\d+|ssh-[^/]+|\.X11-unix|\.ICE-unix|\.XIM-unix|\.font-unix|\.Test-unix|systemd-private-[^/]+)(\/|$)/;
/** The per-user runtime folders (the session bus, systemd's user instance, gpg-agent, pipewire, VS Code's IPC). */
const RUN_NEVER = /^user(\/|$)/;

/** The covered folders as they are named, with how they show what a step names (see {@link CoveredRoot}). */
export const COVERED_ROOTS: readonly { name: string; mode: 'entry' | 'exact'; never: RegExp }[] = [
  { name: '/tmp', mode: 'entry', never: TEMP_NEVER },
  { name: '/var/tmp', mode: 'entry', never: TEMP_NEVER },
  { name: '/run', mode: 'exact', never: RUN_NEVER },
  { name: '/var/run', mode: 'exact', never: RUN_NEVER },
];

/**
 * Folders under a home that hold the sockets of container VMs (Docker Desktop, colima, lima): each is an empty tmpfs,
 * so one made after the step started is out of reach too. Relative to the home.
 */
export const HOME_SOCKET_DIRS: readonly string[] = ['.docker/run', '.docker/desktop', '.colima', '.lima'];

let rootsCache: CoveredRoot[] | null = null;

/**
 * The covered folders that exist here as directories, each once at its real path with every name that leads to it
 * (`/var/run` → `/run` almost everywhere; bubblewrap cannot mount through a symbolic link). Read once per process
 * (the system's layout). Never throws.
 */
export function coveredRoots(): CoveredRoot[] {
  if (rootsCache) return rootsCache;
  const out: CoveredRoot[] = [];
  for (const spec of COVERED_ROOTS) {
    let real: string;
    try {
      real = fs.realpathSync.native(spec.name);
      if (!fs.statSync(real).isDirectory()) continue;
    } catch {
      continue;
    }
    const known = out.find((r) => r.root === real);
    if (known) known.names.push(`${spec.name}/`);
    else out.push({ root: real, names: [...new Set([`${spec.name}/`, `${real}/`])], mode: spec.mode, never: spec.never });
  }
  rootsCache = out;
  return out;
}

/** What a step is shown of a covered folder: a path bound back read-only, or a symbolic link made again (`link`: its target). */
export interface Back {
  path: string;
  link: string | null;
}

/** An absolute path under a covered folder's usual names inside free text (a script, PATH, GIT_DIR=…). */
const NAMED = /(?:^|[^\w./-])(\/(?:var\/)?(?:tmp|run)\/[^\s'"`;:$|&<>(){}*?\\]+)/g;

/**
 * What each covered folder shows of itself for a step that names `texts` (the plan's paths, cwd, the command and its
 * real path, arguments, environment values): per root (its real path), the paths bound back. In an `entry` root,
 * `/tmp/<name>` for every path under it named (and, for a symbolic link, the link made again and its target's entry
 * shown too); in an `exact` root, the named path itself when it exists. Never a socket, a missing path, or what the
 * root's `never` names. One lstat per named path; the folders are never listed, so their size does not matter. Never
 * throws.
 */
export function namedBacks(roots: readonly CoveredRoot[], texts: Iterable<string>): Map<string, Back[]> {
  const out = new Map<string, Back[]>(roots.map((r) => [r.root, []]));
  const seen = new Set<string>();
  const add = (abs: string) => {
    if (seen.has(abs)) return;
    seen.add(abs);
    const root = roots.find((r) => abs.startsWith(`${r.root}/`));
    if (!root) return;
    const rel = abs.slice(root.root.length + 1);
    if (!rel || rel === '.' || rel === '..' || root.never.test(rel)) return;
    // In an exact root, the named path is bound at its own place: bubblewrap cannot make a mount point through a link
    // on the way, so a path whose folder is not its real one is left out.
    if (root.mode === 'exact') {
      try {
        if (fs.realpathSync.native(path.dirname(abs)) !== path.dirname(abs)) return;
      } catch {
        return;
      }
    }
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch {
      return;
    }
    if (st.isSocket()) return;
    const backs = out.get(root.root) as Back[];
    if (st.isSymbolicLink()) {
      let target: string;
      try {
        target = fs.readlinkSync(abs);
      } catch {
        return;
      }
      backs.push({ path: abs, link: target });
      try {
        const real = fs.realpathSync.native(abs);
        const to = roots.find((r) => real.startsWith(`${r.root}/`));
        if (to) add(to.mode === 'entry' ? path.join(to.root, real.slice(to.root.length + 1).split('/')[0] as string) : real);
      } catch {
        // a dangling link: shown as the link alone
      }
      return;
    }
    backs.push({ path: abs, link: null });
  };
  for (const text of texts) {
    if (!text) continue;
    for (const m of `${text}`.matchAll(NAMED)) {
      const named = path.posix.normalize(m[1] as string);
      for (const root of roots) {
        const name = root.names.find((n) => named.startsWith(n));
        if (!name) continue;
        const rel = named.slice(name.length).replace(/\/+$/, '');
        if (!rel || rel.startsWith('../') || rel === '..') break;
        add(path.join(root.root, root.mode === 'entry' ? (rel.split('/')[0] as string) : rel));
        break;
      }
    }
  }
  // A bind inside another bind of the same root is already shown by it.
  for (const [root, backs] of out) {
    const dirs = backs.filter((b) => b.link === null).map((b) => b.path);
    out.set(
      root,
      backs.filter((b) => !dirs.some((d) => d !== b.path && b.path.startsWith(`${d}/`))),
    );
  }
  return out;
}

/**
 * The absolute paths of the unix sockets in a /proc/net/unix table (`Num RefCount Protocol Flags Type St Inode Path`),
 * once each: listening, datagram or connected, as the process that bound each named it. Abstract sockets (`@…`),
 * unnamed ones and relative paths are left out. Pure.
 */
export function unixSocketPaths(table: string): string[] {
  const out = new Set<string>();
  for (const line of table.split('\n')) {
    const m = /^\s*[0-9a-fA-F]+:\s+[0-9A-Fa-f]+\s+[0-9A-Fa-f]+\s+[0-9A-Fa-f]+\s+[0-9A-Fa-f]+\s+[0-9A-Fa-f]+\s+\d+ (\/.*)$/.exec(line);
    if (m) out.add(m[1] as string);
  }
  return [...out];
}

/**
 * The mount points in a /proc/self/mountinfo text (field 5, with the kernel's octal escapes undone) that can be a
 * single file bound there: those whose root in their filesystem (field 4) is not `/` (a whole filesystem's root is a
 * folder), except under /proc, /sys and /dev. A socket bind-mounted into a container (a CI job's
 * /var/run/docker.sock) is one of them, and its listener, in another network namespace, is not in this one's socket
 * table. Pure.
 */
export function mountPoints(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const at = fields[4];
    if (!at || !at.startsWith('/') || fields[3] === '/') continue;
    const p = at.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (/^\/(proc|sys|dev)(\/|$)/.test(p)) continue;
    out.push(p);
  }
  return out;
}

/**
 * Every socket path bound on this host that a step could try: {@link unixSocketPaths} of /proc/net/unix and the
 * {@link mountPoints} of /proc/self/mountinfo (most are folders; {@link socketsToCover} keeps only sockets). Read at
 * every call: a socket bound a moment ago counts. Never throws (an unreadable file gives nothing).
 */
export function boundSocketPaths(): string[] {
  const read = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  return [...new Set([...unixSocketPaths(read('/proc/net/unix')), ...mountPoints(read('/proc/self/mountinfo'))])];
}

/** How a sandbox's mounts leave a path: `hidden` (a tmpfs or a file over it), `own` (a writable bind), `shown` (read-only). */
export type PathView = 'hidden' | 'own' | 'shown';

/** One mount of a sandbox as {@link viewOf} needs it: where it is and what it makes of what lies there. */
export interface ViewMount {
  dest: string;
  view: PathView;
}

/**
 * How `mounts` (in mount order, real paths) leave the real path `p`: the deepest mount at or above it decides (the
 * later one when two are at the same place); none: shown, through `--ro-bind / /`. Pure.
 */
export function viewOf(mounts: readonly ViewMount[], p: string): PathView {
  let best: ViewMount | null = null;
  for (const m of mounts) {
    if (p !== m.dest && !p.startsWith(m.dest === '/' ? '/' : `${m.dest}/`)) continue;
    if (!best || m.dest.length >= best.dest.length) best = m;
  }
  return best ? best.view : 'shown';
}

/**
 * The real paths of the sockets among `candidates` (absolute paths as bound, {@link boundSocketPaths}) that `mounts`
 * would leave shown read-only, each to be covered with /dev/null: not under a covered or hidden folder, not in a
 * writable folder of the step's own, not `declared` (a socket the user's config lets every step reach, or one inside
 * a declared folder). A candidate is resolved through its folder's real path (one realpath per distinct folder) and
 * kept only when it is a socket there; one `hiddenByName` says is hidden is passed over without a system call (most
 * of a desktop's sockets lie in /run/user and /tmp: {@link coveredByName}). Never throws.
 */
export function socketsToCover(
  candidates: readonly string[],
  mounts: readonly ViewMount[],
  declared: readonly string[] = [],
  hiddenByName: (p: string) => boolean = () => false,
): string[] {
  const realDirs = new Map<string, string | null>();
  const realDir = (dir: string): string | null => {
    if (!realDirs.has(dir)) {
      try {
        realDirs.set(dir, fs.realpathSync.native(dir));
      } catch {
        realDirs.set(dir, null);
      }
    }
    return realDirs.get(dir) as string | null;
  };
  const out = new Set<string>();
  for (const c of candidates) {
    if (!path.isAbsolute(c) || c === '/' || hiddenByName(c)) continue;
    const dir = realDir(path.dirname(c));
    if (dir === null) continue;
    const real = path.join(dir, path.basename(c));
    if (out.has(real) || viewOf(mounts, real) !== 'shown') continue;
    if (declared.some((d) => real === d || real.startsWith(`${d}/`))) continue;
    try {
      const st = fs.lstatSync(real);
      if (st.isSocket() && reachable(dir, st)) out.add(real);
    } catch {
      // gone already
    }
  }
  return [...out];
}

/** Permission bits (`mask`: 1 execute, 2 write) that apply to this process's ids for a file, no capability assumed. */
function allowedByMode(st: fs.Stats, mask: number): boolean {
  const uid = process.getuid?.() ?? -1;
  const groups = new Set([process.getegid?.() ?? -1, ...(process.getgroups?.() ?? [])]);
  if (st.uid === uid) return ((st.mode >> 6) & mask) === mask;
  if (groups.has(st.gid)) return ((st.mode >> 3) & mask) === mask;
  return (st.mode & mask) === mask;
}

/**
 * True when a step could connect to the socket `st` in the real folder `dir`: every folder from / down is searchable
 * and the socket writable by this process's ids with no capability — what a step has (bubblewrap's `--cap-drop ALL`,
 * and in its user namespace no capability ever applies to a file whose owner is not mapped). A socket it could not
 * reach needs no cover, and covering one where bubblewrap itself cannot pass (another user's 0700 home, seen: "Can't
 * mkdir parents for …/svc.sock: Permission denied") failed every step of a run started by root.
 */
function reachable(dir: string, st: fs.Stats): boolean {
  if (!allowedByMode(st, 2)) return false;
  const parts = dir.split('/').filter(Boolean);
  // Asked anew for every step (a folder's mode can change between two), one stat per folder of the few sockets left.
  for (let i = 0; i <= parts.length; i++) {
    try {
      if (!allowedByMode(fs.statSync(`/${parts.slice(0, i).join('/')}`), 1)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * A quick test for {@link socketsToCover}: true when the path, as written, lies in a covered folder under a
 * first-level entry that is neither shown back (`backs`, {@link namedBacks}) nor a symbolic link (one lstat per
 * entry, remembered for the predicate's life). A path through a link deeper inside a covered folder is taken as
 * hidden too: the covered folders are the system's and the user's temporary ones, where a service binds its socket
 * at its own path.
 */
export function coveredByName(roots: readonly CoveredRoot[], backs: ReadonlyMap<string, readonly Back[]>): (p: string) => boolean {
  const shownEntries = new Set<string>();
  for (const [root, list] of backs) for (const b of list) shownEntries.add(path.join(root, b.path.slice(root.length + 1).split('/')[0] as string));
  const linked = new Map<string, boolean>();
  return (p) => {
    for (const root of roots) {
      const name = root.names.find((n) => p.startsWith(n));
      if (!name) continue;
      const first = p.slice(name.length).split('/')[0] as string;
      if (!first || first === '.' || first === '..') return false;
      const entry = path.join(root.root, first);
      if (shownEntries.has(entry)) return false;
      let link = linked.get(entry);
      if (link === undefined) {
        try {
          link = fs.lstatSync(entry).isSymbolicLink();
        } catch {
          link = false;
        }
        linked.set(entry, link);
      }
      return !link;
    }
    return false;
  };
}
