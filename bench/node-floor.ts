// A reference path, not a product: the least a Node.js reverse proxy can do per request —
// node:http in, undici out (the same HTTP stack Causeway uses), body buffered, response
// streamed back, no MCP logic. Its CPU per request is the Node floor on this machine, next to
// nginx's floor, so Causeway's own share can be told from the runtime's.
//
//   node dist/bench/node-floor.js --port P --upstream http://127.0.0.1:U/mcp

import { Agent, request } from 'undici';
import { arg, badGateway, serve } from './reference.js';

const upstream = arg('--upstream');
const agent = new Agent({ keepAliveTimeout: 60_000 });
const FORWARD = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
const BACK = ['content-type', 'mcp-session-id', 'cache-control'];

serve((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const headers: Record<string, string> = {};
    for (const h of FORWARD) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    request(upstream, {
      method: (req.method ?? 'POST') as 'POST',
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      dispatcher: agent,
    }).then(
      (up) => {
        const out: Record<string, string> = {};
        for (const h of BACK) {
          const v = up.headers[h];
          if (typeof v === 'string') out[h] = v;
        }
        res.writeHead(up.statusCode, out);
        up.body.on('data', (c: Buffer) => res.write(c));
        up.body.on('end', () => res.end());
        up.body.on('error', () => res.destroy());
      },
      () => badGateway(res),
    );
  });
});
