import t from 'tap';
import { CausewayError } from '../../src/errors.js';
import { parseSse, SseParser, type SseEvent } from '../../src/upstream/http/reader.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function parseAll(chunks: (Uint8Array | string)[], maxEventBytes?: number): SseEvent[] {
  const p = new SseParser(maxEventBytes === undefined ? {} : { maxEventBytes });
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
}

const STREAM =
  '\uFEFF: comment first\r\n' +
  'id: p1\r\nretry: 50\r\ndata:\r\n\r\n' +
  'event: message\rdata: {"a":"é€😀"}\r\r' +
  'data: line one\ndata:  two\n: a comment inside\ndata\n\n' +
  'id: e2\r\ndata:x\r\n\r\n' +
  'data: never dispatched';

const EXPECTED: SseEvent[] = [
  { id: 'p1', retry: 50, data: '' },
  { event: 'message', data: '{"a":"é€😀"}' },
  { data: 'line one\n two\n' },
  { id: 'e2', data: 'x' },
];

t.test('sse-parser: CRLF, CR and LF, BOM, comments, empty and multi-line data', async (t) => {
  t.same(parseAll([enc(STREAM)]), EXPECTED);
  t.same(parseAll([STREAM]), EXPECTED, 'string chunks too');
});

const canon = (evs: SseEvent[]): string =>
  JSON.stringify(evs.map((e) => Object.entries(e).sort(([a], [b]) => a.localeCompare(b))));

t.test('sse-parser: split at every byte boundary', async (t) => {
  const bytes = enc(STREAM);
  const failed: number[] = [];
  for (let i = 0; i <= bytes.length; i++) {
    if (canon(parseAll([bytes.subarray(0, i), bytes.subarray(i)])) !== canon(EXPECTED)) failed.push(i);
  }
  t.same(failed, [], 'every two-chunk split gives the same events');
  t.same(parseAll([...bytes].map((b) => Uint8Array.of(b))), EXPECTED, 'one byte at a time');
});

t.test('sse-parser: field rules', async (t) => {
  t.same(parseAll(['retry: soon\nid: a\0b\ndata: kept\n\n']), [{ data: 'kept' }], 'bad retry and NUL id ignored');
  t.same(parseAll(['id\n\n']), [{ id: '', data: '' }], 'empty id resets');
  t.same(parseAll(['unknown: x\n\n: only comments\n\n\n\n']), [], 'nothing to dispatch');
  t.same(parseAll(['data: a\r', '\ndata: b\n\n']), [{ data: 'a\nb' }], 'CR then LF in the next chunk');
  t.same(parseAll(['data: \uFEFFkeep\n\n']), [{ data: '\uFEFFkeep' }], 'only a leading BOM is stripped');
});

t.test('sse-parser: an event over maxEventBytes is upstream_bad_response', async (t) => {
  t.throws(() => parseAll(['data: ' + 'x'.repeat(200) + '\n\n'], 100), CausewayError);
  const p = new SseParser({ maxEventBytes: 100 });
  t.same(p.push('data: ' + 'x'.repeat(50) + '\n'), []);
  const err = (() => {
    try {
      p.push('data: ' + 'y'.repeat(60));
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  t.match(err, { reason: 'upstream_bad_response' }, 'fails before the line ends');
  const q = new SseParser({ maxEventBytes: 100 });
  for (let i = 0; i < 50; i++) q.push(': keepalive\n\ndata: ' + 'z'.repeat(40) + '\n\n');
  t.pass('comments and dispatched events do not accumulate');
});

t.test('sse-parser: parseSse over an async byte stream', async (t) => {
  async function* body(): AsyncGenerator<Uint8Array> {
    yield enc('data: 1\n');
    yield enc('\ndata: 2\n\n');
  }
  const got: SseEvent[] = [];
  for await (const ev of parseSse(body())) got.push(ev);
  t.same(got, [{ data: '1' }, { data: '2' }]);
});
