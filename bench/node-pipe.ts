// A reference path, not a product: the least any Node.js process in the path can do — each
// client connection spliced to an upstream connection of its own, bytes copied both ways, no
// HTTP parsed at all. On the user's load test (SDK upstream, c=10) it shows what is left for a
// proxy once a Node event loop and two more loopback hops take their share of this machine's two
// cores, between nginx (C, no event-loop crossing per byte) and the HTTP-speaking references
// (node-floor.ts, node-translator.ts).
//
//   node dist/bench/node-pipe.js --port P --upstream http://127.0.0.1:U/mcp

import net from 'node:net';
import { arg } from './reference.js';

const upstream = new URL(arg('--upstream'));

net
  .createServer({ noDelay: true }, (client) => {
    const up = net.connect({ host: upstream.hostname, port: Number(upstream.port), noDelay: true });
    client.pipe(up);
    up.pipe(client);
    client.on('error', () => up.destroy());
    up.on('error', () => client.destroy());
  })
  .listen(Number(arg('--port')), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
