// The README's first command: the demo starts and the curl line it prints really works.

import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { exitOf, spawnOwned } from './helpers/processes.js';

const DEMO = fileURLToPath(new URL('../demo/demo.js', import.meta.url));

t.test('npm run demo prints a curl line that answers through Causeway', async (t) => {
  const child = spawnOwned(process.execPath, [DEMO, '--listen.port', '0', '--admin.port', '0'], {
    t,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`demo did not start: ${out}`)), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ctrl-C')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`demo exited with ${code}: ${out}${err}`)));
  });
  const curl = out.slice(out.indexOf('curl -s'), out.indexOf('\n\nCtrl-C'));
  t.match(curl, /^curl -s http:\/\/127\.0\.0\.1:\d+\/mcp/);
  const { stdout } = await promisify(execFile)('bash', ['-c', curl]);
  const answer = JSON.parse(stdout) as { result?: { content?: Array<{ text?: string }>; resultType?: string } };
  t.equal(answer.result?.resultType, 'complete');
  t.equal(answer.result?.content?.[0]?.text, 'hello from a legacy server');
  const exited = exitOf(child);
  child.kill('SIGTERM');
  t.equal((await exited).code, 0, 'demo stops cleanly');
});
