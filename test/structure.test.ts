// The shape of src/, read from its import statements: no two files import each other, even
// through others, and no two folders either, type-only imports counted; each folder is a floor
// that imports only the floors below it (FLOORS), in types too; a folder is entered through its
// index.ts only, and no stage but the front door imports the pipeline, and none the composition
// root, at run time (they call the stages, never the other way round). Type-only imports are left
// out of those two (they are gone once compiled).

import t from 'tap';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sources } from './helpers/sources.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
/** The composition root (app.ts and the parts it lists, parts/), the pipeline, and the bin. */
const ROOT_FILES = new Set(['app.ts', 'pipeline.ts', 'main.ts']);
const isRoot = (file: string) => ROOT_FILES.has(file) || file.startsWith('parts/');
/** The one stage that calls the pipeline: it hands it each modern request. */
const FRONT_DOOR = 'ingress/front-door.ts';
/**
 * The folders of src/, top floor first: a folder imports only folders below it, type imports
 * counted. The parts of the composition root (parts/) stand above them all. The request path
 * runs down it (the front door, the warm lane that serves a warm call straight through the
 * stages below it, a mount's skills folder in front of the legacy passthrough beside it and of
 * the routing of modern requests, the side stages
 * routing calls, the pool, the upstream clients, the dialect they translate with); below are the
 * ground floors every stage writes with: the metrics (which declare their own label values, so
 * that no stage's type reaches up into them), the reply writers, the parsed request, tracing, the
 * bus between replicas, and the settings, and under them a mount's view (its tools, prompts and
 * resources as its clients see them), which the settings check and every stage looks through. The
 * audit record sits just under the front door, the one stage that knows a request whole when it
 * ends. On top, beside the composition root, `causeway doctor`, which only main.ts runs: it checks
 * a server with the upstream clients, the envelope's and dialect's readings and the settings. Just
 * under the composition root, the status page, which reads the parts it is given (their types
 * only) and the liveness beat of the bus.
 */
const FLOORS = [
  'parts',
  'status',
  'doctor',
  'ingress',
  'quotas',
  'audit',
  'warm',
  'translate',
  'skills',
  'passthrough',
  'routing',
  'tasks',
  'subscriptions',
  'mrtr',
  'auth',
  'cache',
  'pool',
  'upstream',
  'dialect',
  'metrics',
  'egress',
  'envelope',
  'tracing',
  'bus',
  'config',
  'view',
];
const IMPORT = /^(?:import|export)\s+(type\s+)?(?:\{([^}]*)\}|\*(?:\s+as\s+\w+)?)\s+from\s+'(\.[^']+)';/gms;

/** file (relative to src/) -> the files it imports at run time. */
const graph = new Map<string, string[]>();
/** The same, type-only imports included. */
const typeGraph = new Map<string, string[]>();
for (const file of sources(SRC)) {
  const from = relative(SRC, file);
  const to: string[] = [];
  const all: string[] = [];
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const names = (m[2] ?? '*')
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean);
    const target = normalize(join(dirname(from), m[3]!)).replace(/\.js$/, '.ts');
    all.push(target);
    if (m[1] !== undefined || names.every((n) => n.startsWith('type '))) continue;
    to.push(target);
  }
  graph.set(from, to);
  typeGraph.set(from, all);
}

t.test('the graph was read', async (t) => {
  t.ok(graph.size > 50, `${graph.size} source files`);
  t.ok(graph.get('app.ts')?.includes('ingress/index.ts'), 'app.ts imports the ingress');
});

/** Every cycle a depth-first walk of `edges` meets, as `a -> b -> a`. */
function cyclesOf(edges: ReadonlyMap<string, Iterable<string>>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]) => {
    state.set(f, 'open');
    for (const g of edges.get(f) ?? []) {
      if (state.get(g) === 'open') cycles.push([...path.slice(path.indexOf(g)), g].join(' -> '));
      else if (!state.has(g)) visit(g, [...path, g]);
    }
    state.set(f, 'done');
  };
  for (const f of edges.keys()) if (!state.has(f)) visit(f, [f]);
  return cycles;
}

t.test('the cycle finder finds a cycle', async (t) => {
  t.same(
    cyclesOf(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
      ]),
    ),
    ['a -> b -> c -> a'],
  );
  t.same(
    cyclesOf(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ),
    [],
  );
});

t.test('no cycles between files, type imports counted', async (t) => {
  t.same(cyclesOf(typeGraph), []);
});

t.test('a folder is entered through its index.ts', async (t) => {
  const past: string[] = [];
  for (const [from, tos] of graph) {
    for (const to of tos) {
      if (dirname(to) !== '.' && dirname(to) !== dirname(from) && !to.endsWith('/index.ts'))
        past.push(`${from} -> ${to}`);
    }
  }
  t.same(past, []);
});

t.test(
  'stages never import the pipeline or the composition root; the front door hands requests to the pipeline',
  async (t) => {
    const upward: string[] = [];
    for (const [from, tos] of graph) {
      if (isRoot(from)) continue;
      for (const to of tos)
        if (isRoot(to) && !(from === FRONT_DOOR && to === 'pipeline.ts')) upward.push(`${from} -> ${to}`);
    }
    t.same(upward, []);
    t.ok(graph.get(FRONT_DOOR)?.includes('pipeline.ts'), 'the front door calls the pipeline itself');
  },
);

t.test('no cycles between folders, type imports counted: each stage builds only on the ones before it', async (t) => {
  const folders = new Map<string, Set<string>>();
  for (const [from, tos] of typeGraph) {
    const a = dirname(from);
    if (a === '.') continue;
    for (const to of tos) {
      const b = dirname(to);
      if (b === '.' || b === a) continue;
      if (!folders.has(a)) folders.set(a, new Set());
      folders.get(a)!.add(b);
    }
  }
  t.ok(folders.size > 5, `${folders.size} folders import another`);
  t.same(cyclesOf(folders), []);
});

t.test(
  'floors that hold in types too: routing never imports the pipeline, the pool never imports dialect',
  async (t) => {
    const up: string[] = [];
    for (const [from, tos] of typeGraph) {
      for (const to of tos) {
        if (
          (from.startsWith('routing/') && to === 'pipeline.ts') ||
          (from.startsWith('pool/') && to.startsWith('dialect/'))
        )
          up.push(`${from} -> ${to}`);
      }
    }
    t.ok(typeGraph.get('pipeline.ts')?.includes('routing/index.ts'), 'type imports are read');
    t.same(up, []);
  },
);

t.test('each folder imports only the floors below it, type imports counted', async (t) => {
  const top = (file: string) => file.split('/')[0]!;
  const folders = new Set([...typeGraph.keys()].filter((f) => dirname(f) !== '.').map(top));
  t.same(
    [...folders].filter((f) => !FLOORS.includes(f)),
    [],
    'every folder has its floor',
  );
  const up: string[] = [];
  for (const [from, tos] of typeGraph) {
    if (dirname(from) === '.') continue;
    for (const to of tos) {
      if (dirname(to) !== '.' && FLOORS.indexOf(top(to)) < FLOORS.indexOf(top(from))) up.push(`${from} -> ${to}`);
    }
  }
  t.same(up, []);
});

t.test(
  "upstream/'s own floors, type imports counted: core imports no sibling, http and replicas never each other",
  async (t) => {
    const part = (file: string) => (file.startsWith('upstream/') ? file.split('/')[1] : undefined);
    const crossing = (from: string, to: string) => {
      const a = part(from);
      const b = part(to);
      if (a === undefined || b === undefined || a === b || !to.includes('/', 'upstream/'.length)) return false;
      if (a === 'core') return true;
      if (a === 'replicas') return b === 'http' || b === 'channel';
      return a === 'http' && b === 'replicas';
    };
    const up: string[] = [];
    for (const [from, tos] of typeGraph) for (const to of tos) if (crossing(from, to)) up.push(`${from} -> ${to}`);
    t.ok(typeGraph.get('upstream/http/legacy-client.ts')?.includes('upstream/core/index.ts'), 'the parts are read');
    t.same(up, []);
  },
);
