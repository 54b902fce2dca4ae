#!/usr/bin/env node
// Keeps .ts/.js sources within 120 columns where the formatter cannot: it wraps comments and splits string literals,
// then runs the formatter, and names every line still over 120 so a person can shorten it.
//
//   node scripts/wrap-long-lines.mjs             rewrite, format, report (exit 1 if a line is still too long)
//   node scripts/wrap-long-lines.mjs --check     no writes: report the lines over 120 (exit 1 if any)
//   node scripts/wrap-long-lines.mjs FILE...     the same on the named files only
//
// What it rewrites, on lines over 120 only:
// - a `//` comment paragraph is refilled to 120 from its long line on; list items keep their hanging indent, and
//   blank comment lines, fenced code, tables, tags and more deeply indented lines are left as they are;
// - a trailing `code; // words` comment moves onto its own line above the code;
// - a one-line `/** ... */` becomes a block of ` * ` lines, and block comment lines are refilled like `//` ones;
// - a string literal or template literal is split at spaces (at commas if it has too few) into `'a ' + 'b'`, when
//   every piece then fits a line of its own; a template only in its literal text, never inside `${...}`; never where
//   only a literal is allowed or its type counts (imports, types, property names and element access, enum members,
//   `case`, comparisons, tagged templates, `as const`).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const WIDTH = 120;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIRS = ['src', 'test', 'bench', 'demo', 'scripts'];
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;

const args = process.argv.slice(2);
const check = args.includes('--check');
const named = args.filter((a) => !a.startsWith('--'));

function sourceFiles() {
  if (named.length > 0) return named;
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', ...DIRS], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((f) => SOURCE.test(f) && !f.endsWith('.d.ts'))
    .map((f) => join(ROOT, f))
    .filter((f) => existsSync(f));
}

/** Index of the first character of every line. */
function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

function lineOf(starts, pos) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Greedy fill of `words` into lines of at most WIDTH columns: `first` prefixes line one, `rest` the others. */
function fill(words, first, rest) {
  const lines = [];
  let line = first;
  let empty = true;
  for (const w of words) {
    if (!empty && line.length + 1 + w.length > WIDTH) {
      lines.push(line);
      line = rest + w;
    } else {
      line = empty ? line + w : `${line} ${w}`;
    }
    empty = false;
  }
  lines.push(line);
  return lines;
}

const LIST = /^([-*+]|\d+[.)])\s+/;
const DIRECTIVE = /^\s*(\/|@ts-|biome-ignore|eslint|prettier-ignore|#region|#endregion)/;

/**
 * One line of a comment split into its prefix (up to and including the spaces before the text) and text.
 * `marker` is the `//` or `*` the line starts with ('' for a block comment line without a star).
 */
function commentLine(line, marker) {
  const m =
    marker === '//'
      ? /^(\s*)(\/\/)( *)(.*)$/.exec(line)
      : marker === '*'
        ? /^(\s*)(\*)(?!\/)( *)(.*)$/.exec(line)
        : null;
  if (m) return { indent: m[1], marker: m[2], pad: m[3].length, body: m[4] };
  if (marker === '') {
    const n = /^(\s*)(.*)$/.exec(line);
    return { indent: n[1], marker: '', pad: 0, body: n[2] };
  }
  return undefined;
}

/** Paragraph continuation: same shape and padding, and not a structural line of its own. */
function continues(c, first, pad) {
  if (!c || c.indent !== first.indent || c.marker !== first.marker || c.pad !== pad) return false;
  const b = c.body;
  return (
    b !== '' && !LIST.test(b) && !b.startsWith('|') && !b.startsWith('```') && !b.startsWith('@') && !DIRECTIVE.test(b)
  );
}

/**
 * Whether `line` is code: in a ``` fence or after an `@example` tag, counting from `from` (the comment's first line).
 */
function inCode(lines, from, line) {
  let fence = false;
  let example = false;
  for (let i = from; i < line; i++) {
    if (/^\s*(\/\/|\*)?\s*```/.test(lines[i])) fence = !fence;
    const tag = /^\s*(\/\/|\*)?\s*@(\w+)/.exec(lines[i]);
    if (tag) example = tag[2] === 'example';
  }
  return fence || example;
}

/**
 * Refill the paragraph of comment lines that starts at the over-long line `at`: it and the continuation lines after it
 * (lines before it are already short). `last` is the last line the paragraph may take. Returns an edit or undefined.
 */
function refill(lines, starts, at, last, marker, fenceFrom) {
  const first = commentLine(lines[at], marker);
  if (!first || first.body === '' || DIRECTIVE.test(first.body) || first.body.startsWith('|')) return undefined;
  if (inCode(lines, fenceFrom, at) || first.body.startsWith('```')) return undefined;
  if (!/\s/.test(first.body.trim())) return undefined;
  const list = LIST.exec(first.body);
  const pad = first.pad + (list ? list[0].length : 0);
  let end = at;
  while (end + 1 <= last && continues(commentLine(lines[end + 1], marker), first, pad)) end++;
  const words = [];
  for (let i = at; i <= end; i++) words.push(...commentLine(lines[i], marker).body.trim().split(/\s+/));
  const head = `${first.indent}${first.marker}${' '.repeat(first.pad)}`;
  const rest = `${first.indent}${first.marker}${' '.repeat(pad)}`;
  const out = fill(words, head, rest);
  const from = starts[at];
  const to = starts[end] + lines[end].length;
  const replacement = out.join('\n');
  const original = lines.slice(at, end + 1).join('\n');
  if (replacement === original) return undefined;
  return { from, to, text: replacement };
}

const OPERATORS_BELOW_PLUS = new Set([
  ts.SyntaxKind.PlusToken,
  ts.SyntaxKind.LessThanToken,
  ts.SyntaxKind.GreaterThanToken,
  ts.SyntaxKind.LessThanEqualsToken,
  ts.SyntaxKind.GreaterThanEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandToken,
  ts.SyntaxKind.BarBarToken,
  ts.SyntaxKind.QuestionQuestionToken,
  ts.SyntaxKind.EqualsToken,
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
  ts.SyntaxKind.CommaToken,
]);

/**
 * How a literal may be replaced by a concatenation: 'bare', 'paren' (wrap it in parentheses), or undefined when only
 * a literal may stand there or a literal type would be lost.
 */
function splitContext(node) {
  const p = node.parent;
  if (!p) return undefined;
  switch (p.kind) {
    case ts.SyntaxKind.CallExpression:
    case ts.SyntaxKind.NewExpression:
      if (p.expression === node) return 'paren';
      if (p.expression.kind === ts.SyntaxKind.ImportKeyword) return undefined;
      if (ts.isIdentifier(p.expression) && p.expression.text === 'require') return undefined;
      return 'bare';
    case ts.SyntaxKind.VariableDeclaration:
    case ts.SyntaxKind.PropertyDeclaration:
    case ts.SyntaxKind.Parameter:
    case ts.SyntaxKind.BindingElement:
    case ts.SyntaxKind.PropertyAssignment:
      return p.initializer === node ? 'bare' : undefined;
    case ts.SyntaxKind.ReturnStatement:
    case ts.SyntaxKind.ThrowStatement:
    case ts.SyntaxKind.ArrayLiteralExpression:
    case ts.SyntaxKind.ConditionalExpression:
    case ts.SyntaxKind.ArrowFunction:
    case ts.SyntaxKind.ParenthesizedExpression:
    case ts.SyntaxKind.TemplateSpan:
    case ts.SyntaxKind.SpreadElement:
    case ts.SyntaxKind.ExportAssignment:
      return 'bare';
    case ts.SyntaxKind.BinaryExpression:
      if (OPERATORS_BELOW_PLUS.has(p.operatorToken.kind)) return 'bare';
      if (p.operatorToken.kind === ts.SyntaxKind.MinusToken && p.left === node) return 'bare';
      return undefined;
    case ts.SyntaxKind.AsExpression:
    case ts.SyntaxKind.SatisfiesExpression:
      return ts.isTypeReferenceNode(p.type) && p.type.typeName.getText() === 'const' ? undefined : 'paren';
    case ts.SyntaxKind.PropertyAccessExpression:
    case ts.SyntaxKind.NonNullExpression:
    case ts.SyntaxKind.AwaitExpression:
    case ts.SyntaxKind.TypeOfExpression:
    case ts.SyntaxKind.PrefixUnaryExpression:
      return 'paren';
    default:
      return undefined;
  }
}

/**
 * Positions (offsets into the literal's source) just after a space where the literal may be cut, and as a fallback just
 * after a comma not followed by a space (JSON, label sets): in the text of a string, or in the literal parts of a
 * template (never inside a `${...}` substitution).
 */
function cutPoints(sf, node) {
  const start = node.getStart(sf);
  const text = sf.text;
  const parts = ts.isTemplateExpression(node)
    ? [node.head, ...node.templateSpans.map((s) => s.literal)].map((p) => [p.getStart(sf), p.end])
    : [[start, node.end]];
  const points = [];
  const commas = [];
  for (const [from, to] of parts) {
    // Leave the delimiters alone: the quote or backtick, `${` and `}`.
    const first = from + 1;
    const last = to - (text[to - 1] === '{' ? 2 : 1);
    for (let i = first; i < last; i++) {
      const ch = text[i];
      if (ch === '\\') {
        i++;
        continue;
      }
      if (ch === ' ' && text[i + 1] !== ' ' && i + 1 < last) points.push(i + 1 - start);
      else if (ch === ',' && text[i + 1] !== ' ' && i + 1 < last) commas.push(i + 1 - start);
    }
  }
  return { points, commas };
}

/** The literal `raw` cut into pieces of at most `budget` columns each (quotes included), at the given points. */
function pieces(raw, points, budget) {
  const quote = raw[0];
  const out = [];
  let start = 0;
  let k = 0;
  while (true) {
    const open = start === 0 ? 0 : 1; // a later piece gains an opening quote
    if (raw.length - start + open <= budget) break;
    let best = -1;
    let firstAfter = -1;
    for (; k < points.length; k++) {
      const p = points[k];
      if (p <= start) continue;
      if (firstAfter < 0) firstAfter = p;
      if (p - start + open + 1 <= budget) best = p;
      else break;
    }
    const cut = best >= 0 ? best : firstAfter;
    if (cut < 0) break;
    out.push((start === 0 ? '' : quote) + raw.slice(start, cut) + quote);
    start = cut;
  }
  out.push((start === 0 ? '' : quote) + raw.slice(start));
  return out;
}

/** As `pieces`, with the narrowest budget that needs no more pieces: even lengths, no short last piece. */
function balanced(raw, points, budget) {
  const most = pieces(raw, points, budget);
  let lo = 10;
  let hi = budget;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pieces(raw, points, mid).length <= most.length) hi = mid;
    else lo = mid + 1;
  }
  return pieces(raw, points, hi);
}

/** Comment ranges of the file, each once, found through the leading trivia of every token. */
function commentRanges(sf) {
  const text = sf.getFullText();
  const seen = new Map();
  const visit = (node) => {
    const kids = node.getChildren(sf);
    if (kids.length === 0 || node.kind === ts.SyntaxKind.EndOfFileToken) {
      for (const r of ts.getLeadingCommentRanges(text, node.pos) ?? []) seen.set(r.pos, r);
    }
    for (const k of kids) visit(k);
  };
  visit(sf);
  return [...seen.values()].sort((a, b) => a.pos - b.pos);
}

/** One round of edits on `text`: to comments, or (`strings`) to string literals. */
function edits(file, text, strings, aggressive) {
  const kind = /\.(ts|mts|cts)$/.test(file) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const starts = lineStarts(text);
  const lines = text.split('\n');
  const long = new Set();
  lines.forEach((l, i) => {
    if (l.length > WIDTH) long.add(i);
  });
  if (long.size === 0) return [];
  const out = [];

  // Multi-line template literals: a comment may not be moved to the start of a line inside one.
  const templates = [];
  const literals = [];
  const walk = (node) => {
    if (ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      templates.push([node.getStart(sf), node.end]);
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      literals.push(node);
      if (ts.isTemplateExpression(node)) {
        ts.forEachChild(node, walk);
      }
      return;
    }
    ts.forEachChild(node, walk);
  };
  walk(sf);
  const inTemplate = (pos) => templates.some(([a, b]) => pos > a && pos < b);

  for (const r of strings ? [] : commentRanges(sf)) {
    const l0 = lineOf(starts, r.pos);
    const l1 = lineOf(starts, r.end);
    let touches = false;
    for (let i = l0; i <= l1; i++) if (long.has(i)) touches = true;
    if (!touches) continue;
    const before = text.slice(starts[l0], r.pos);
    const indent = /^\s*/.exec(before)[0];
    const ownLine = before.trim() === '';
    const lineEnd = starts[l1] + lines[l1].length;
    const after = text.slice(r.end, lineEnd);

    if (r.kind === ts.SyntaxKind.SingleLineCommentTrivia) {
      if (!ownLine) {
        // code; // words  ->  the comment on its own line above the code
        if (after.trim() !== '' || inTemplate(starts[l0])) continue;
        const comment = text.slice(r.pos, r.end);
        if (DIRECTIVE.test(comment.slice(2))) continue;
        out.push({ from: starts[l0], to: r.end, text: `${indent}${comment}\n${before.trimEnd()}` });
        continue;
      }
      // Own-line comment: refill the paragraph that starts at it, up to the end of this run of `//` lines.
      let last = l0;
      while (
        last + 1 < lines.length &&
        /^\s*\/\//.test(lines[last + 1]) &&
        lines[last + 1].indexOf('//') === indent.length
      )
        last++;
      let first = l0;
      while (first > 0 && /^\s*\/\//.test(lines[first - 1]) && lines[first - 1].indexOf('//') === indent.length)
        first--;
      const e = refill(lines, starts, l0, last, '//', first);
      if (e) out.push(e);
      continue;
    }

    // Block comment.
    const body = text.slice(r.pos, r.end);
    const opener = body.startsWith('/**') ? '/**' : '/*';
    if (l0 === l1) {
      const inner = body.slice(opener.length, -2).trim();
      if (!ownLine || inner === '' || !/\s/.test(inner)) continue;
      const words = inner.split(/\s+/);
      const block = [`${indent}${opener}`, ...fill(words, `${indent} * `, `${indent} * `), `${indent} */`];
      const rest = after.trim() === '' ? '' : `\n${indent}${after.trimStart()}`;
      out.push({ from: starts[l0], to: lineEnd, text: block.join('\n') + rest });
      continue;
    }
    const starred = /^\s*\*/.test(lines[l0 + 1] ?? '');
    const cIndent = `${indent} `;
    // Text on the opening line: move it onto a line of its own first.
    if (long.has(l0) && ownLine && text.slice(r.pos + opener.length, starts[l0] + lines[l0].length).trim() !== '') {
      const rest = text.slice(r.pos + opener.length, starts[l0] + lines[l0].length).trim();
      out.push({
        from: r.pos,
        to: starts[l0] + lines[l0].length,
        text: `${opener}\n${starred ? `${cIndent}* ` : cIndent}${rest}`,
      });
      continue;
    }
    // Text before the closing */: move the */ onto a line of its own.
    const closing = lines[l1];
    if (
      long.has(l1) &&
      closing
        .slice(0, closing.indexOf('*/'))
        .replace(/^\s*\*?/, '')
        .trim() !== ''
    ) {
      const at = r.end - 2;
      out.push({ from: at, to: at, text: `\n${starred ? cIndent : indent}` });
      continue;
    }
    for (let i = l0 + 1; i < l1; i++) {
      if (!long.has(i)) continue;
      const e = refill(lines, starts, i, l1 - 1, starred ? '*' : '', l0 + 1);
      if (e) {
        out.push(e);
        break; // one paragraph per comment per round; the next round sees the new line numbers
      }
    }
  }

  if (!strings) return out;
  // Outermost first: a literal inside a substitution of a template that is cut already waits for the next pass.
  const cut = [];
  for (const node of literals) {
    const start = node.getStart(sf);
    if (cut.some(([a, b]) => start >= a && node.end <= b)) continue;
    // The formatter never breaks a line inside a template's `${...}`: cutting a literal there gains nothing.
    if (ts.findAncestor(node.parent, (a) => ts.isTemplateSpan(a) || (ts.isStatement(a) ? 'quit' : false))) continue;
    const l0 = lineOf(starts, start);
    if (l0 !== lineOf(starts, node.end) || !long.has(l0)) continue;
    const endCol = node.end - starts[l0];
    const indent = /^\s*/.exec(lines[l0])[0].length;
    const raw = text.slice(start, node.end);
    if (endCol <= WIDTH && !aggressive) continue;
    const budget = WIDTH - indent - (aggressive ? 16 : 12);
    // A literal that fits on a line of its own is the formatter's to move, unless the formatter has already run.
    if (!aggressive && raw.length <= budget) continue;
    if (aggressive && (endCol <= WIDTH || raw.length <= 20)) continue;
    const how = splitContext(node);
    if (!how) continue;
    const room = Math.max(budget, 30);
    const { points, commas } = cutPoints(sf, node);
    let parts = balanced(raw, points, room);
    if (parts.some((p) => p.length > room)) {
      const all = [...points, ...commas].sort((a, b) => a - b);
      parts = balanced(raw, all, room);
    }
    if (parts.length < 2) continue;
    // Every piece must fit on a line of its own (a long substitution may not): else the line is left for a person.
    if (parts.some((p) => p.length > WIDTH - indent - 6)) continue;
    const joined = parts.join(' + ');
    out.push({ from: start, to: node.end, text: how === 'paren' ? `(${joined})` : joined });
    cut.push([start, node.end]);
  }
  return out;
}

function apply(text, list) {
  const sorted = [...list].sort((a, b) => b.from - a.from);
  let result = text;
  let floor = Infinity;
  for (const e of sorted) {
    if (e.to > floor) continue; // overlaps one already applied; the next round picks it up
    result = result.slice(0, e.from) + e.text + result.slice(e.to);
    floor = e.from;
  }
  return { result };
}

/**
 * Comments, in rounds until nothing changes (one paragraph per comment per round); then literals, in one round, as a
 * piece of a cut literal is on the same long line until the formatter has run.
 */
function rewrite(file, aggressive) {
  const before = readFileSync(file, 'utf8');
  let text = before;
  for (let round = 0; round < 20; round++) {
    const list = edits(file, text, false, aggressive);
    if (list.length === 0) break;
    const { result } = apply(text, list);
    if (result === text) break;
    text = result;
  }
  text = apply(text, edits(file, text, true, aggressive)).result;
  if (text !== before) writeFileSync(file, text);
  return text !== before;
}

/** The formatter over the tree (or the named files), again until it changes nothing: a few constructs take two runs. */
function format(files) {
  const local = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'biome.cmd' : 'biome');
  const bin = existsSync(local) ? local : 'biome';
  const snapshot = () => files.map((f) => readFileSync(f, 'utf8')).join('\0');
  for (let run = 0; run < 3; run++) {
    const before = snapshot();
    try {
      execFileSync(bin, ['format', '--write', '--no-errors-on-unmatched', ...(named.length > 0 ? files : [])], {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
      console.error('the formatter is not installed (npm ci); formatting skipped');
      return;
    }
    if (snapshot() === before) return;
  }
}

function report(files) {
  const over = [];
  for (const f of files) {
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((l, i) => {
        if (l.length > WIDTH)
          over.push(`${f.startsWith(ROOT) ? f.slice(ROOT.length + 1) : f}:${i + 1}: ${l.length} columns`);
      });
  }
  for (const o of over) console.log(o);
  if (over.length > 0) console.log(`${over.length} line(s) over ${WIDTH} columns; shorten them by hand`);
  return over.length;
}

const files = sourceFiles();
if (check) {
  process.exit(report(files) > 0 ? 1 : 0);
}
// Comments and the literals that cannot fit anywhere; the formatter; then what the formatter left too long.
const changed = new Set();
for (const f of files) if (rewrite(f, false)) changed.add(f);
format(files);
for (let pass = 0; pass < 2; pass++) {
  let again = 0;
  for (const f of files) if (rewrite(f, true)) changed.add(f), again++;
  if (again === 0) break;
  format(files);
}
console.log(`comments or literals rewritten in ${changed.size} file(s)`);
process.exit(report(files) > 0 ? 1 : 0);
