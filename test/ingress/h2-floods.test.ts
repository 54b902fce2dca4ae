// HTTP/2 control-frame floods on h2c: 20,000 PINGs, SETTINGS or RST_STREAMs from a client that
// does not read its answers. The flooding connection is closed by Causeway (GOAWAY), and other
// clients are served throughout. Raw frames on a socket; a real node:http2 client beside it.

import t from 'tap';
import http2 from 'node:http2';
import net from 'node:net';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernHeaders, toolCall } from '../e2e/wire.js';
import { h2Request } from './h2.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const GOAWAY = 0x7;

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

const FLOODS: Record<string, (i: number) => Buffer> = {
  ping: () => frame(0x6, 0, 0, Buffer.alloc(8)),
  // SETTINGS_MAX_CONCURRENT_STREAMS = 100, again and again: each one asks for an ACK.
  settings: () => frame(0x4, 0, 0, Buffer.from([0, 3, 0, 0, 0, 100])),
  // RST_STREAM(CANCEL) on streams that were never opened.
  rst: (i) => frame(0x3, 0, 2 * i + 1, Buffer.from([0, 0, 0, 8])),
};

/** A normal request on its own h2c session. */
async function servedOverH2(): Promise<number> {
  const session = http2.connect(causeway.url.replace(/\/mcp$/, ''));
  session.on('error', () => undefined);
  try {
    const call = toolCall('echo', { text: 'beside a flood' });
    const res = await h2Request(
      session,
      { ':method': 'POST', ':path': '/mcp', ...modernHeaders('tools/call', 'echo') },
      call.body,
    );
    return res.status;
  } finally {
    session.destroy();
  }
}

for (const [kind, make] of Object.entries(FLOODS)) {
  t.test(`h2c_client-${kind}-flood-connection-closed-others-served`, async (t) => {
    const socket = net.connect(causeway.port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    socket.on('error', () => undefined);
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.pause();
    socket.write(Buffer.concat([PREFACE, frame(0x4, 0, 0, Buffer.alloc(0))]));
    socket.write(Buffer.concat(Array.from({ length: 20_000 }, (_, i) => make(i))));

    t.equal(await servedOverH2(), 200, 'another client is served while the flood is unread');

    // Now read what the server sent: somewhere in it, a GOAWAY, and then the end of the connection.
    let seen = Buffer.alloc(0);
    let goaway = false;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (d: Buffer) => {
      seen = Buffer.concat([seen, d]);
      let at = seen.indexOf(PREFACE) === 0 ? PREFACE.length : 0;
      while (seen.length - at >= 9) {
        const length = seen.readUIntBE(at, 3);
        if (seen.length - at < 9 + length) break;
        if (seen[at + 3] === GOAWAY) goaway = true;
        at += 9 + length;
      }
      seen = seen.subarray(at);
    });
    socket.resume();
    const timer = new Promise<'open'>((r) => setTimeout(() => r('open'), 30_000).unref());
    t.not(
      await Promise.race([closed.then(() => 'closed' as const), timer]),
      'open',
      'the flooding connection is closed by Causeway',
    );
    t.ok(goaway, 'with a GOAWAY first');
    t.equal(await servedOverH2(), 200, 'and Causeway still serves afterwards');
  });
}
