// A setting given where it cannot apply is a start-up problem naming the setting, listed with
// every other problem, rather than accepted and silently doing nothing: upstream.era modern on an
// HTTP+SSE upstream (only 2024-11-05 servers speak it), and stdio's own settings on an HTTP one.

import t from 'tap';
import { configProblems as problemsOf } from '../helpers/config.js';

const SSE = ['--upstream.transport', 'sse', '--upstream.url', 'http://127.0.0.1:1/sse'];
const NOT_SSE =
  '.era: modern cannot apply to transport sse (a 2024-11-05 HTTP+SSE server is legacy); use legacy or auto';
const HTTP = ['--upstream.url', 'http://127.0.0.1:1/mcp'];
const STDIO = ['--upstream.transport', 'stdio', '--upstream.command', 'node'];

t.test('upstream.era modern on an HTTP+SSE upstream is refused; legacy and auto are not', async (t) => {
  t.same(problemsOf([...SSE, '--upstream.era', 'modern']), [`upstream${NOT_SSE}`]);
  t.same(problemsOf([...SSE, '--upstream.era', 'legacy']), []);
  t.same(problemsOf(SSE), []);
  t.same(problemsOf([...HTTP, '--upstream.era', 'modern']), [], 'Streamable HTTP takes it');
  t.same(problemsOf([...STDIO, '--upstream.era', 'modern']), [], 'so does stdio');
});

t.test('per entry, with the other problems at once', async (t) => {
  const upstreams = JSON.stringify({
    old: { transport: 'sse', url: 'http://127.0.0.1:1/sse', era: 'modern' },
    web: { url: 'http://127.0.0.1:2/mcp', command: 'node', maxProcesses: 3 },
    local: { transport: 'stdio', command: 'node', maxProcesses: 3 },
  });
  const mounts = JSON.stringify({
    '/a': { upstreams: ['old'] },
    '/b': { upstreams: ['web'] },
    '/c': { upstreams: ['local'] },
  });
  t.same(problemsOf(['--upstreams', upstreams, '--mounts', mounts, '--listen.path', 'no-slash']).sort(), [
    'listen.path: must start with /',
    `upstreams.old${NOT_SSE}`,
    'upstreams.web.command: only for transport stdio, not streamable-http',
    'upstreams.web.maxProcesses: only for transport stdio, not streamable-http',
  ]);
  t.same(problemsOf([...HTTP, '--upstream.maxProcesses', '5']), [
    'upstream.maxProcesses: only for transport stdio, not streamable-http',
  ]);
  const inherited = JSON.stringify({ web: { url: 'http://127.0.0.1:2/mcp' }, local: { transport: 'stdio' } });
  const two = JSON.stringify({ '/a': { upstreams: ['web'] }, '/b': { upstreams: ['local'] } });
  const defaults = ['--upstreams', inherited, '--mounts', two, '--upstream.command', 'node'];
  t.same(problemsOf(defaults), [], 'upstream.command as the default of the stdio entries');
});
