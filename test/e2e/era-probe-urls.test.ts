// The era probe of an upstream with several URLs asks each in turn before it serves the era as
// unknown: the first URL answering 503 (a replica restarting behind its load balancer) says
// nothing of the others, and a 2026-only server on the second shows the era.

import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders, post } from './wire.js';

t.test('a first URL answering 503 does not hide the modern era of the second', async (t) => {
  const modern = await startModernServer();
  t.teardown(() => modern.close());
  let refused = 0;
  const restarting = createServer((req, res) => {
    refused++;
    req.resume();
    res.writeHead(503, { 'retry-after': '1' }).end();
  });
  await new Promise<void>((resolve) => restarting.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => restarting.close(() => resolve())));
  const down = `http://127.0.0.1:${(restarting.address() as AddressInfo).port}/mcp`;

  const causeway = await startCauseway({
    upstreams: JSON.stringify({ two: { urls: [down, modern.url] } }),
    mounts: JSON.stringify({ '/mcp': { upstreams: ['two'] } }),
  });
  t.teardown(() => causeway.close());
  await post(causeway.url, modernBody('tools/list'), modernHeaders('tools/list'));
  t.ok(refused >= 1, 'the first URL was asked');
  t.ok((modern.stats().requestsByMethod['server/discover'] ?? 0) >= 1, 'then the second');
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  t.match(metrics, /causeway_upstream_era\{upstream="two",era="modern"\} 1/, 'the era is found');
});
