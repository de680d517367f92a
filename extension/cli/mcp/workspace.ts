import fs from 'node:fs';
import path from 'node:path';

/**
 * The folder an MCP client may name files in (`verdict mcp --workspace DIR`, default the server's cwd): every path a
 * tool takes is resolved against it and must stay inside it once symbolic links are followed, so a client (or a
 * prompt-injected model driving it) cannot lint, run or read a manifest elsewhere on the machine.
 */
export class Workspace {
  /** The workspace folder, absolute and with symbolic links resolved. */
  readonly root: string;

  /** @throws Error when `dir` is not an existing folder */
  constructor(dir: string) {
    const abs = path.resolve(dir);
    let real: string;
    try {
      real = fs.realpathSync(abs);
    } catch {
      throw new Error(`workspace ${abs} does not exist`);
    }
    if (!fs.statSync(real).isDirectory()) throw new Error(`workspace ${abs} is not a folder`);
    this.root = real;
  }

  /** True when `real` (an absolute, link-free path) is the root or below it. */
  contains(real: string): boolean {
    const rel = path.relative(this.root, real);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  }

  /**
   * Where an absolute path lands once every symbolic link on it is followed, as far as it exists: the real path of its
   * longest existing ancestor with the rest appended (a folder not made yet, such as a workdir, still lands where its
   * existing parent's links take it; a dangling link lands where it points).
   */
  static landing(abs: string): string {
    const rest: string[] = [];
    let at = path.resolve(abs);
    for (let hops = 0; ;) {
      try {
        return path.join(fs.realpathSync(at), ...rest.reverse());
      } catch {
        // Not there, or a link that does not resolve: a dangling link lands where it points.
      }
      let link: string | null = null;
      try {
        if (fs.lstatSync(at).isSymbolicLink()) link = fs.readlinkSync(at);
      } catch {
        // does not exist at all
      }
      if (link !== null && hops++ < 40) {
        // Relative to the link's real folder, as the kernel reads it (`..` in the target climbs from there).
        at = path.resolve(Workspace.landing(path.dirname(at)), link);
        continue;
      }
      const parent = path.dirname(at);
      if (parent === at) return path.join(at, ...rest.reverse());
      rest.push(path.basename(at));
      at = parent;
    }
  }

  /** True when the absolute path `abs`, its links followed (see {@link landing}), is the root or below it. */
  holds(abs: string): boolean {
    return this.contains(Workspace.landing(abs));
  }

  /**
   * An existing file named by a client, relative to the root or absolute, as its real path.
   * @throws Error saying which path and why: it does not exist, is not a file, or lies outside the workspace
   *   (directly, through `..`, or through a symbolic link)
   */
  file(p: string, what = 'file'): string {
    if (typeof p !== 'string' || !p.trim()) throw new Error(`${what}: a path is required`);
    if (p.includes('\0')) throw new Error(`${what}: the path contains a NUL character`);
    const abs = path.resolve(this.root, p);
    let real: string;
    try {
      real = fs.realpathSync(abs);
    } catch {
      if (!this.contains(abs)) throw new Error(`${what} ${p} is outside the workspace ${this.root}`);
      throw new Error(`${what} ${p} does not exist (resolved to ${abs})`);
    }
    if (!this.contains(real)) throw new Error(`${what} ${p} is outside the workspace ${this.root}${real !== abs ? ` (it resolves to ${real})` : ''}`);
    if (!fs.statSync(real).isFile()) throw new Error(`${what} ${p} is not a file`);
    return real;
  }
}
