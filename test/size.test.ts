// Sizes of src/ that a reader can take in at once: no function over MAX_FUNCTION_LINES lines (from
// its first token to its closing brace, read with the TypeScript parser), no file over
// MAX_FILE_LINES lines, and no folder over MAX_ENTRIES entries. A subfolder counts every entry
// (files and folders, README.md too); src/ itself counts its files only, since each of its folders
// is a stage of its own with a floor in test/structure.test.ts, and the files beside them are the
// composition root and the few modules every stage shares.

import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sources } from './helpers/sources.js';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const MAX_FUNCTION_LINES = 100;
const MAX_FILE_LINES = 450;
const MAX_ENTRIES = 12;

function folders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => [join(dir, e.name), ...folders(join(dir, e.name))]);
}

/** Lines (first to last, both counted) of each function in `text` that has a body, by a readable name. */
export function functionLines(file: string, text: string): Array<{ name: string; lines: number }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Array<{ name: string; lines: number }> = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n) && 'body' in n && n.body) {
      const line = lineOf(n.getStart(source)) + 1;
      found.push({ name: `${nameOf(n)} (line ${line})`, lines: lineOf(n.end) - line + 2 });
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

function nameOf(n: ts.SignatureDeclaration): string {
  if (n.name && ts.isIdentifier(n.name)) return n.name.text;
  const parent = n.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

t.test('the function counter counts from the first token to the closing brace', async (t) => {
  const text = `// a
export function f(): void {
  const g = () => {
    return;
  };
  g();
}
`;
  t.same(functionLines('x.ts', text), [
    { name: 'f (line 2)', lines: 6 },
    { name: 'g (line 3)', lines: 3 },
  ]);
});

t.test(`no function in src/ over ${MAX_FUNCTION_LINES} lines`, async (t) => {
  const over: string[] = [];
  for (const file of sources(SRC)) {
    const rel = relative(SRC, file);
    for (const f of functionLines(file, readFileSync(file, 'utf8'))) {
      if (f.lines > MAX_FUNCTION_LINES) over.push(`${rel}: ${f.name}: ${f.lines} lines`);
    }
  }
  t.same(over, []);
});

t.test(`no file in src/ over ${MAX_FILE_LINES} lines`, async (t) => {
  const over: string[] = [];
  for (const file of sources(SRC)) {
    const rel = relative(SRC, file);
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    if (lines > MAX_FILE_LINES) over.push(`${rel}: ${lines} lines`);
  }
  t.same(over, []);
});

t.test(`no folder in src/ over ${MAX_ENTRIES} entries; src/ itself over ${MAX_ENTRIES} files`, async (t) => {
  const over: string[] = [];
  const rootFiles = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isFile());
  if (rootFiles.length > MAX_ENTRIES) over.push(`src/: ${rootFiles.length} files`);
  for (const dir of folders(SRC)) {
    const rel = relative(SRC, dir);
    const entries = readdirSync(dir).length;
    if (entries > MAX_ENTRIES) over.push(`src/${rel}/: ${entries} entries`);
  }
  t.same(over, []);
});

/** Two files held tighter: the composition root lists the parts, and the warm call is one call's own work. */
const HELD: Record<string, number> = { 'app.ts': 200, 'warm/call.ts': 300 };

t.test('the composition root and the warm call within their own sizes', async (t) => {
  for (const [file, max] of Object.entries(HELD)) {
    const lines = readFileSync(join(SRC, file), 'utf8').split('\n').length - 1;
    t.ok(lines <= max, `${file}: ${lines} lines, at most ${max}`);
  }
});
