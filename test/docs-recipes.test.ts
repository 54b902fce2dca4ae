// The README's recipes work as written: this file runs the README's own text, not a copy of it.
//
// How it finds them: a fenced block right after an HTML comment `<!-- recipe NAME STEP -->` in
// README.md is step STEP of recipe NAME. `serve` is a shell block that starts servers and keeps
// running (it is run with bash in a process group of its own, which the test kills when it ends);
// `run` is a shell block run to its end, or for the client recipe a JavaScript file; `output` is
// what it prints (the curl's JSON compared parsed, the client's lines exactly). Every recipe
// below must be there, so a recipe taken out of the README fails the test.
//
// What is substituted, and nothing else:
// - Ports: 3000 (the legacy server), 6379 (Redis), 8080 and 8081 (data), 9464 and 9465 (admin)
//   become free ports the test picks, wherever the text says `:PORT` or `--<flag> PORT`; a port a
//   command leaves at its default (8080, 9464, or the port in the config file) is given through
//   CAUSEWAY_LISTEN_PORT / CAUSEWAY_ADMIN_PORT, and the config file's upstream URL through
//   CAUSEWAY_UPSTREAM_URL, since the file itself is run as shipped.
// - The demo: only the quick start's first line is run (its second is `npm test`); `npm ci && `
//   is dropped (the checkout is installed), and `npm run demo` runs the demo script's last
//   command from package.json without its build step (building again would rewrite dist/ under
//   the test files running from it).
// Redis is a redis-server of the test's own (test/helpers/redis.ts); the Redis pair's legacy
// server is started by the test, so it can count the tool's calls.

import t, { type Test } from 'tap';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startLegacyServer } from './fixtures/legacy-server.js';
import { isRunning, spawnOwned } from './helpers/processes.js';
import { freePort, startRedis } from './helpers/redis.js';
import { until } from './helpers/until.js';
import { callTool, ELICIT, nameAnswer, textOf } from './mrtr/wire.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const exec = promisify(execFile);

type Step = 'serve' | 'run' | 'output';

/** Every `<!-- recipe NAME STEP -->` of the README and the fenced block after it. */
function recipes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of README.matchAll(/^<!-- recipe ([a-z-]+) (serve|run|output) -->\n```[a-z]*\n([\s\S]*?)^```$/gm)) {
    found.set(`${m[1]} ${m[2]}`, m[3]!);
  }
  return found;
}

const RECIPES = recipes();
function recipe(name: string, step: Step): string {
  const text = RECIPES.get(`${name} ${step}`);
  if (text === undefined) throw new Error(`README.md has no block marked <!-- recipe ${name} ${step} -->`);
  return text;
}

const PORTS = [3000, 6379, 8080, 8081, 9464, 9465] as const;
type Ports = Record<(typeof PORTS)[number], number>;

async function freePorts(): Promise<Ports> {
  const ports = {} as Ports;
  const taken = new Set<number>();
  for (const p of PORTS) {
    let port: number;
    do port = await freePort();
    while (taken.has(port));
    taken.add(port);
    ports[p] = port;
  }
  return ports;
}

/** The block with each recipe port, after `:` or after a flag, replaced by its free port. */
function withPorts(text: string, ports: Ports): string {
  return text.replace(/(:|--[a-zA-Z.]*port )(\d+)\b/g, (all, before: string, port: string) => {
    const free = ports[Number(port) as keyof Ports];
    return free === undefined ? all : `${before}${free}`;
  });
}

/** What the blocks run with: no CAUSEWAY_* of the test's own, the default ports moved. */
function recipeEnv(ports: Ports, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CAUSEWAY_')) env[k] = v;
  return { ...env, CAUSEWAY_LISTEN_PORT: String(ports[8080]), CAUSEWAY_ADMIN_PORT: String(ports[9464]), ...extra };
}

interface Served {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
}

const groups = new Set<number>();
process.on('exit', () => {
  for (const pid of groups) killGroup(pid);
});
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* the group is gone */
  }
}

/**
 * A `serve` block run by bash in a process group of its own: its background jobs and npm's
 * children are all in it, and all are killed when the test ends.
 */
function serve(t: Test, text: string, env: NodeJS.ProcessEnv): Served {
  const stdio = ['ignore', 'pipe', 'pipe'] as const;
  const child = spawnOwned('bash', ['-c', text], { t, detached: true, cwd: ROOT, env, stdio: [...stdio] });
  const pid = child.pid!;
  groups.add(pid);
  t.teardown(() => {
    killGroup(pid);
    groups.delete(pid);
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

/** Waits for `check`, failing at once (with what the block printed) when the block has exited. */
async function whileServing<T>(served: Served, what: string, check: () => T | Promise<T>): Promise<T> {
  let gone: string | undefined;
  const value = await until(
    async () => {
      if (!isRunning(served.child)) return (gone = `the block exited (${served.child.exitCode}): ${served.output()}`);
      return check();
    },
    { what, timeoutMs: 60_000, everyMs: 100 },
  );
  if (gone !== undefined) throw new Error(`${what}: ${gone}`);
  return value as T;
}

const ready = (port: number) => async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;

/** Whether something accepts connections on the port (the recipe's own legacy server). */
const listening = (port: number) => () =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('error', () => resolve(false));
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
  });

/** A `run` shell block, run to its end; its stdout. */
async function run(text: string, env: NodeJS.ProcessEnv): Promise<string> {
  return (await exec('bash', ['-c', text], { cwd: ROOT, env, timeout: 60_000 })).stdout;
}

/** The one-upstream curl, sent to the data port the recipes call 8080: it answers what the README shows. */
async function curlEcho(t: Test, ports: Ports, env: NodeJS.ProcessEnv): Promise<void> {
  const answer = JSON.parse(await run(withPorts(recipe('one-upstream', 'run'), ports), env)) as {
    result?: { content?: Array<{ text?: string }>; resultType?: string };
  };
  t.equal(answer.result?.content?.[0]?.text, 'hi', 'the legacy server echoed the text');
  t.same(answer, JSON.parse(recipe('one-upstream', 'output')), 'the answer the README shows');
}

t.test('every recipe is in the README', async (t) => {
  t.same([...RECIPES.keys()].sort(), [
    'client output',
    'client run',
    'config-file serve',
    'demo serve',
    'one-upstream output',
    'one-upstream run',
    'one-upstream serve',
    'redis-pair serve',
  ]);
});

t.test('Quick start: npm run demo prints a curl line that answers', async (t) => {
  const ports = await freePorts();
  // The quick start's two commands: the demo, then the tests (run by CI, not here).
  const [text = '', tests = ''] = recipe('demo', 'serve').split('\n');
  t.match(text, /^npm ci && npm run demo\b/, 'the README says npm ci && npm run demo');
  t.match(tests, /^npm test\b/, 'and then npm test');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const command = pkg.scripts.demo!.split('&&').at(-1)!.trim();
  t.match(command, /^node dist\/demo\//, 'the demo script ends by running the built demo');
  const asRun = text.replace(/^npm ci && /, '').replace('npm run demo', command);
  const served = serve(t, withPorts(asRun, ports), recipeEnv(ports));
  const printed = () => served.output().includes('Ctrl-C') && served.output();
  const out = String(await whileServing(served, 'the demo to print its curl line', printed));
  const curl = out.slice(out.indexOf('curl -s'), out.indexOf('\n\nCtrl-C'));
  t.match(curl, `curl -s http://127.0.0.1:${ports[8080]}/mcp`, 'the curl line names the port Causeway listens on');
  const answer = JSON.parse(await run(curl, recipeEnv(ports))) as {
    result?: { content?: Array<{ text?: string }>; resultType?: string };
  };
  t.equal(answer.result?.resultType, 'complete');
  t.equal(answer.result?.content?.[0]?.text, 'hello from a legacy server');
});

t.test('One upstream: the legacy server and Causeway in front of it, then the curl and the 2026 client', async (t) => {
  const ports = await freePorts();
  const env = recipeEnv(ports);
  const served = serve(t, withPorts(recipe('one-upstream', 'serve'), ports), env);
  await whileServing(served, 'the legacy server of the one-upstream recipe to listen', listening(ports[3000]));
  await whileServing(served, 'Causeway of the one-upstream recipe to be ready', ready(ports[9464]));
  await curlEcho(t, ports, env);

  t.test('the client example, run with node as written', async (t) => {
    // In the checkout, so that its import finds node_modules/@modelcontextprotocol/client (2.4.0).
    const dir = mkdtempSync(join(ROOT, 'dist', 'recipe-client-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'client.mjs');
    writeFileSync(file, withPorts(recipe('client', 'run'), ports));
    const { stdout } = await exec(process.execPath, [file], { cwd: dir, env, timeout: 60_000 });
    t.equal(stdout, recipe('client', 'output'), 'it prints what the README says: the 2026 face, pinned and in auto');
    const pkg = join(ROOT, 'node_modules/@modelcontextprotocol/client/package.json');
    const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string };
    t.match(recipe('client', 'run'), `@modelcontextprotocol/client@${version}`, 'the version it names is the one run');
  });
});

t.test('From a config file: the shipped example, its secrets from env, answers the first curl', async (t) => {
  const ports = await freePorts();
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const env = recipeEnv(ports, { CAUSEWAY_UPSTREAM_URL: upstream.url });
  const served = serve(t, withPorts(recipe('config-file', 'serve'), ports), env);
  await whileServing(served, 'Causeway of the config-file recipe to be ready', ready(ports[9464]));
  await curlEcho(t, ports, env);
  t.notMatch(served.output(), /REPLACE|forbidden_host|Host not allowed/, 'no placeholder, no refused Host');
});

t.test('Two replicas sharing Redis: a multi-round retry sent to the other replica completes', async (t) => {
  const ports = await freePorts();
  const redis = await startRedis(t);
  ports[6379] = redis.port;
  const upstream = await startLegacyServer({ port: ports[3000] });
  t.teardown(() => upstream.close());
  const env = recipeEnv(ports);
  const served = serve(t, withPorts(recipe('redis-pair', 'serve'), ports), env);
  const both = async () => (await ready(ports[9464])()) && ready(ports[9465])();
  await whileServing(served, 'both replicas of the Redis recipe to be ready', both);
  const a = `http://127.0.0.1:${ports[8080]}/mcp`;
  const b = `http://127.0.0.1:${ports[8081]}/mcp`;
  const caps = { elicitation: { form: {} } };

  const first = await callTool(a, ELICIT, {}, { caps });
  t.equal(first.status, 200);
  t.equal(first.body?.result?.resultType, 'input_required', 'the first replica asks for input');
  const state = first.body?.result?.requestState as string | undefined;
  t.ok(state, 'with a requestState');
  const answers = { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state };
  const retry = await callTool(b, ELICIT, answers, { caps });
  t.equal(retry.status, 200, `the other replica takes the retry: ${JSON.stringify(retry.body)}`);
  t.equal(textOf(retry), 'Hello, Ada!', 'and the call completes with the answer given');
  t.equal(upstream.stats().toolCalls[ELICIT], 1, 'the tool ran once: the retry went on with the held call');
  const sessions = await redis.admin.keys('causeway:session:*');
  t.ok(sessions.length > 0, 'the pooled session is recorded in the Redis of the recipe');
  await curlEcho(t, { ...ports, 8080: ports[8081] }, env);
});
