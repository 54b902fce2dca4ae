// What a user installs is what works: the npm tarball, installed the way the Dockerfile's runtime
// stage installs it (production dependencies only, from the lockfile, into an empty folder),
// starts in front of a legacy server and answers a real 2026-07-28 client; the same tarball
// installed globally and through npx gives a `causeway` that answers --help and --version.

import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { envName, flagName } from '../../src/config/load.js';
import { SETTINGS } from '../../src/config/schema.js';
import { spawnFixture } from '../e2e/upstreams.js';
import { spawnCauseway } from '../helpers/causeway.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  files: string[];
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const npmQuiet = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

const work = mkdtempSync(join(tmpdir(), 'causeway-pack-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

// `npm test` has just built dist/; prepack would build it again (and is checked below).
const packed = JSON.parse(
  (await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: REPO })).stdout,
) as Array<{
  filename: string;
  files: Array<{ path: string }>;
}>;
const tarball = join(work, packed[0]!.filename);

/** The Dockerfile's instructions of its last (runtime) stage, and of all stages. */
function dockerfile(): { all: string[]; runtime: string[] } {
  const text = readFileSync(join(REPO, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const all = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const lastFrom = all.map((l) => l.startsWith('FROM ')).lastIndexOf(true);
  return { all, runtime: all.slice(lastFrom) };
}

t.test('the package has a free name, a bin, a build before packing, and ships only the built proxy', async (t) => {
  t.not(pkg.name, 'causeway', 'the npm name causeway belongs to another package');
  t.equal(pkg.bin.causeway, 'dist/src/main.js');
  t.match(pkg.scripts.prepack ?? '', /npm run build/, 'npm pack builds dist/ first');
  const paths = packed[0]!.files.map((f) => f.path);
  t.ok(paths.includes('dist/src/main.js'), 'the bin is in the tarball');
  t.ok(paths.includes('LICENSE') && paths.includes('README.md') && paths.includes('package.json'));
  t.same(
    paths.filter((p) => p.startsWith('dist/') && !p.startsWith('dist/src/')),
    [],
    'no tests, bench or demo',
  );
  t.same(
    paths.filter((p) => p.endsWith('.ts') || p.endsWith('.map')),
    [],
    'no sources or source maps',
  );
});

t.test('the runtime stage, outside a container: production dependencies only, serving a modern client', async (t) => {
  const app = join(work, 'app');
  await run('tar', ['-xzf', tarball, '-C', work]);
  await run('mv', [join(work, 'package'), app]);
  copyFileSync(join(REPO, 'package-lock.json'), join(app, 'package-lock.json'));
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts', ...npmQuiet], { cwd: app });
  const installed = readdirSync(join(app, 'node_modules'));
  for (const dep of Object.keys(pkg.dependencies)) t.ok(existsSync(join(app, 'node_modules', dep)), `${dep} installed`);
  for (const dev of ['typescript', 'tap', '@modelcontextprotocol'])
    t.notOk(installed.includes(dev), `dev dependency ${dev} absent`);

  // The image's own environment (ENV of the runtime stage), as the container would have it.
  const env: Record<string, string> = {};
  for (const line of dockerfile().runtime.filter((l) => l.startsWith('ENV '))) {
    for (const m of line.slice(4).matchAll(/([A-Z_]+)=(\S+)/g)) env[m[1]!] = m[2]!;
  }
  t.equal(env.CAUSEWAY_LISTEN_HOST, '0.0.0.0', 'the image listens beyond loopback');

  const upstream = await spawnFixture(0, { t });
  const causeway = await spawnCauseway(
    { 'upstream.url': upstream.url },
    { t, env, main: join(app, 'dist/src/main.js'), cwd: app },
  );
  const url = new URL(causeway.url);
  url.hostname = '127.0.0.1';

  const client = new Client(
    { name: 'packed', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  t.teardown(() => client.close());
  t.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const r = await client.callTool({ name: 'echo', arguments: { text: 'from the tarball' } });
  t.same(r.content, [{ type: 'text', text: 'from the tarball' }]);

  // The image's HEALTHCHECK command, run as Docker would run it (exec form, no shell).
  const check = dockerfile().runtime.find((l) => l.startsWith('HEALTHCHECK '));
  const argv = JSON.parse(check!.slice(check!.indexOf('CMD ') + 4)) as string[];
  t.equal(argv[0], 'node', 'the health check needs no shell and no curl');
  const adminPort = new URL(causeway.adminUrl!).port;
  const healthy = await run(argv[0]!, argv.slice(1), { env: { CAUSEWAY_ADMIN_PORT: adminPort } }).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  t.equal(healthy, 0, 'healthy while serving');
  await causeway.close();
  const down = await run(argv[0]!, argv.slice(1), { env: { CAUSEWAY_ADMIN_PORT: adminPort } }).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  t.equal(down, 1, 'unhealthy once stopped');
});

t.test('the Dockerfile: pinned Node 20 slim, non-root, both ports, SIGTERM, exec-form entry point', async (t) => {
  const { all, runtime } = dockerfile();
  const base = all.find((l) => l.startsWith('ARG NODE_IMAGE='))?.split('=')[1] ?? '';
  t.match(base, /^node:20\.\d+\.\d+-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/, 'official Node 20 slim image, exact version');
  t.equal(all.filter((l) => l.startsWith('FROM ')).length, 2, 'a build stage and a runtime stage');
  t.ok(
    all.some((l) => /npm ci --omit=dev/.test(l)),
    'runtime dependencies installed without dev dependencies',
  );
  const user = runtime.find((l) => l.startsWith('USER '))?.slice(5) ?? '';
  t.match(user, /^[1-9]\d*:[1-9]\d*$/, 'numeric non-root user and group');
  const listenPort = SETTINGS.find((s) => s.path === 'listen.port')!.default;
  const adminPort = SETTINGS.find((s) => s.path === 'admin.port')!.default;
  t.ok(runtime.includes(`EXPOSE ${listenPort} ${adminPort}`), 'both default ports exposed');
  t.ok(runtime.includes('STOPSIGNAL SIGTERM'));
  t.match(
    runtime.find((l) => l.startsWith('HEALTHCHECK ')) ?? '',
    `|| ${adminPort}) + '/healthz'`,
    'health check on the admin port',
  );
  const entry = JSON.parse(runtime.find((l) => l.startsWith('ENTRYPOINT '))!.slice('ENTRYPOINT '.length)) as string[];
  t.same(entry, ['node', `/app/${pkg.bin.causeway}`], 'exec form, the package bin');
  const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
  t.ok(
    ignored.includes('node_modules') && ignored.includes('dist'),
    'the build context leaves local installs and builds out',
  );
});

/** `causeway --help` and `--version` from an installed bin. */
async function checkBin(t: Test, bin: string, args: string[] = [], cwd = work): Promise<void> {
  const version = await run(bin, [...args, '--version'], { cwd });
  t.equal(version.stdout, `${pkg.version}\n`, '--version');
  const help = await run(bin, [...args, '--help'], { cwd });
  for (const s of SETTINGS) {
    const at = help.stdout.indexOf(`  ${flagName(s.path)} <`);
    t.ok(at >= 0, `--help lists ${s.path}`);
    const block = help.stdout.slice(at, at + 600);
    t.ok(
      block.includes(`env ${envName(s.path)}, default ${JSON.stringify(s.default)}`),
      `${s.path}: env name and default`,
    );
    t.ok(block.includes(s.doc), `${s.path}: its doc`);
  }
}

t.test('npm install -g of the tarball gives a working causeway', async (t) => {
  const prefix = join(work, 'global');
  await run('npm', ['install', '-g', '--prefix', prefix, tarball, ...npmQuiet]);
  await checkBin(t, join(prefix, 'bin', 'causeway'));
});

t.test('npx runs causeway from the tarball', async (t) => {
  const npxCache = join(homedir(), '.npm', '_npx');
  const before = new Set(existsSync(npxCache) ? readdirSync(npxCache) : []);
  t.teardown(() => {
    for (const d of existsSync(npxCache) ? readdirSync(npxCache) : []) {
      if (!before.has(d)) rmSync(join(npxCache, d), { recursive: true, force: true });
    }
  });
  await checkBin(t, 'npx', ['--yes', ...npmQuiet, `--package=${tarball}`, 'causeway']);
});

t.test('a setting flag without its value is still an error, with exit code 2', async (t) => {
  const main = join(REPO, 'dist/src/main.js');
  const err = await run(process.execPath, [main, '--listen.port']).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  t.equal(err.code, 2);
  t.match(err.stderr, '--listen.port needs a value');
});
