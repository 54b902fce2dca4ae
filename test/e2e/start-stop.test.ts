// The built bin at its edges: a port another process holds stops start-up with exit 2 and a
// message naming the setting (not Node's EADDRINUSE and exit 1), and a second SIGTERM or SIGINT
// during the drain exits at once instead of waiting drain.delayMs out.

import net from 'node:net';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { spawnCauseway } from '../helpers/causeway.js';
import { exitOf, spawnOwned, type Exit } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
/** Nothing listens there; start-up does not reach the upstream. */
const UPSTREAM = 'http://127.0.0.1:9/mcp';

/** A port held by this test for as long as `t` runs. */
async function heldPort(t: Test): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as net.AddressInfo).port;
}

/** Runs the bin with `settings` to its exit: its exit and what it wrote on stderr. */
async function runToExit(t: Test, settings: Record<string, string | number>): Promise<Exit & { stderr: string }> {
  const argv = [MAIN, ...Object.entries(settings).flatMap(([k, v]) => [`--${k}`, String(v)])];
  const env = { PATH: process.env.PATH };
  const child = spawnOwned(process.execPath, argv, { t, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = await exitOf(child);
  return { ...exit, stderr };
}

t.test('listen.port held by another process: exit 2 naming the setting', async (t) => {
  const port = await heldPort(t);
  const run = await runToExit(t, { 'upstream.url': UPSTREAM, 'listen.port': port, 'admin.port': 0 });
  t.equal(run.code, 2, 'exit code 2, as for bad configuration');
  t.match(run.stderr, `listen.port: 127.0.0.1:${port} is already in use`, 'names the setting and the address');
  t.notMatch(run.stderr, /EADDRINUSE|\n\s+at /, 'no raw Node error or stack');
});

t.test('admin.port held by another process: exit 2 naming the setting, with the likely cause', async (t) => {
  const port = await heldPort(t);
  const run = await runToExit(t, { 'upstream.url': UPSTREAM, 'listen.port': 0, 'admin.port': port });
  t.equal(run.code, 2, 'exit code 2');
  t.match(run.stderr, `admin.port: 127.0.0.1:${port} is already in use (another replica on this host? set admin.port)`);
  t.notMatch(run.stderr, /EADDRINUSE|\n\s+at /, 'no raw Node error or stack');
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`a second ${signal} during the drain exits at once`, async (t) => {
    // The drain would hold the process this long: an exit well before it is the second signal's.
    const delayMs = 120_000;
    const causeway = await spawnCauseway({ 'upstream.url': UPSTREAM, 'drain.delayMs': delayMs }, { t, graceMs: 1_000 });
    const exited = exitOf(causeway.child);
    causeway.child.kill(signal);
    await until(() => causeway.logs.some((l) => l.includes('"msg":"draining"')), { what: 'the drain to begin' });
    causeway.child.kill(signal);
    const bound = new Promise<'still running'>((r) => setTimeout(() => r('still running'), delayMs / 2).unref());
    const exit = await Promise.race([exited, bound]);
    t.not(exit, 'still running', 'exited long before drain.delayMs');
    if (exit === 'still running') return;
    t.not(exit.code, 0, `a non-zero exit (${exit.code})`);
    const said = () => causeway.logs.find((l) => l.includes('second signal during the drain'));
    const line = await until(said, { what: 'the log line' });
    t.match(JSON.parse(line), { level: 40, signal }, 'logged at warn, naming the signal');
  });
}
