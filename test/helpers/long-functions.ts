import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript-6';

/** One function, method, constructor, accessor or arrow function and its length. */
export interface FunctionLength {
  /** Path relative to the folder searched, with forward slashes. */
  file: string;
  /** Its name as written (`Class.method`, the variable or property an arrow is assigned to), or `<anonymous>`. */
  name: string;
  /** 1-based line of its first line. */
  line: number;
  /** Lines from its first to its last line, both included (comments inside count; its docstring does not). */
  lines: number;
}

/** The name a reader would search for: the declared name, else what the function is assigned to, with its class. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  let own: string | undefined;
  if (ts.isConstructorDeclaration(node)) own = 'constructor';
  else if (node.name && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) || ts.isPrivateIdentifier(node.name))) own = node.name.text;
  else if (ts.isVariableDeclaration(node.parent) && ts.isIdentifier(node.parent.name)) own = node.parent.name.text;
  else if (ts.isPropertyAssignment(node.parent) || ts.isPropertyDeclaration(node.parent)) own = node.parent.name.getText();
  const cls = ts.isClassLike(node.parent) ? node.parent.name?.text : undefined;
  if (own && cls) return `${cls}.${own}`;
  const literal = ts.isObjectLiteralExpression(node.parent) ? node.parent : ts.isPropertyAssignment(node.parent) ? node.parent.parent : undefined;
  if (own && literal) {
    const holder = literal.parent;
    if (holder && ts.isVariableDeclaration(holder) && ts.isIdentifier(holder.name)) return `${holder.name.text}.${own}`;
  }
  return own ?? '<anonymous>';
}

/** Every function-like node with a body in one source text. */
export function functionLengths(file: string, text: string): FunctionLength[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line;
      out.push({ file, name: nameOf(fn), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * Functions longer than `maxLines` lines in the `.ts` files under `root` (recursively), longest first.
 * @param root folder to search; reported paths are relative to it
 */
export function longFunctions(root: string, maxLines: number): FunctionLength[] {
  const found: FunctionLength[] = [];
  for (const rel of fs.readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    if (!rel.endsWith('.ts') || rel.endsWith('.d.ts')) continue;
    const file = rel.split(path.sep).join('/');
    found.push(...functionLengths(file, fs.readFileSync(path.join(root, rel), 'utf8')).filter((f) => f.lines > maxLines));
  }
  return found.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}

// `node --import=tsx test/helpers/long-functions.ts [folder] [max]`: prints them, one a line.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? 'extension/core');
  for (const f of longFunctions(root, Number(process.argv[3] ?? 80))) console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
}
