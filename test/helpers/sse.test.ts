// The tests' SSE decoder (test/helpers/sse.ts) against the event-stream rules it claims.

import t from 'tap';
import { Readable } from 'node:stream';
import { parseSse, SseDecoder, SseReader, sseMessages } from './sse.js';

t.test('fields, line ends, comments, BOM, and the unterminated tail', async (t) => {
  const body =
    '\uFEFFid: p1\r\nretry: 50\r\ndata:\r\n\r\n' +
    'event: message\rdata: {"a":1}\r\r' +
    ': keep-alive\n\n' +
    'data: one\ndata:  two\n: inside\nunknown: x\n\n' +
    'retry: soon\nid: a\0b\ndata: kept\n\n' +
    'data: never ended';
  t.same(parseSse(body), [
    { id: 'p1', retry: 50, data: '' },
    { event: 'message', data: '{"a":1}' },
    { data: 'one\n two' },
    { data: 'kept' },
  ]);
  t.same(parseSse('unknown: x\n\n: c\n\n'), [], 'a block with no known field is no event');
});

t.test('sseMessages: the data of each event with data, JSON-parsed', async (t) => {
  const body = 'id: p\ndata:\n\nevent: message\ndata: {"jsonrpc":"2.0","id":1}\n\ndata: nope\n\n';
  t.throws(() => sseMessages(body), SyntaxError, 'data that is not JSON throws');
  t.same(sseMessages(body, { invalid: 'undefined' }), [{ jsonrpc: '2.0', id: 1 }, undefined]);
  t.same(sseMessages('data: [1,\ndata: 2]\n\n'), [[1, 2]], 'data lines joined with LF');
});

t.test('SseDecoder: chunks split anywhere, a CRLF split across chunks, comments counted lazily', async (t) => {
  const text = 'data: a\r\n\r\n: ka\n\ndata: é\r\n\r\n';
  for (let cut = 0; cut <= text.length; cut++) {
    const d = new SseDecoder();
    d.push(text.slice(0, cut));
    const got = d.takeAll();
    d.push(text.slice(cut));
    got.push(...d.takeAll());
    t.same(got, [{ data: 'a' }, { data: 'é' }], `cut at ${cut}`);
  }
  const d = new SseDecoder();
  d.push('data: 1\n\n: ka\n\ndata: 2\n\n');
  t.same(d.take(), { data: '1' });
  t.equal(d.comments, 0, 'a comment after the event taken is not read yet');
  t.same(d.take(), { data: '2' });
  t.equal(d.comments, 1);
});

t.test('SseReader: a fetch-style body and a node stream, byte by byte', async (t) => {
  const bytes = Buffer.from(': hi\n\ndata: {"x":"é"}\n\nid: 9\n\n');
  const byteByByte = () => Array.from(bytes, (b) => Buffer.from([b]));
  const web = new SseReader(Readable.toWeb(Readable.from(byteByByte())) as ReadableStream<Uint8Array>);
  t.same(await web.nextMessage(), { x: 'é' });
  t.equal(web.comments, 1);
  t.equal(await web.nextMessage(), undefined, 'the id-only event has no data; then the end');
  const node = new SseReader(Readable.from(byteByByte()));
  t.same(await node.next(), { data: '{"x":"é"}' });
  t.same(await node.next(), { id: '9', data: '' });
  t.equal(await node.next(), undefined);
});

t.test('SseReader: a failed read throws, or ends the stream with endOnError', async (t) => {
  const failing = () =>
    (async function* () {
      yield Buffer.from('data: 1\n\n');
      throw new Error('reset');
    })();
  const strict = new SseReader(failing());
  t.equal(await strict.nextMessage(), 1);
  await t.rejects(strict.nextMessage(), /reset/);
  const lenient = new SseReader(failing(), { endOnError: true });
  t.equal(await lenient.nextMessage(), 1);
  t.equal(await lenient.nextMessage(), undefined);
});
