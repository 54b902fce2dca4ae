// The audit's tap reads the JSON-RPC errors of an answer as it is written, whatever writes it:
// a JSON body (one message or a batch's), SSE events split anywhere across writes, an event or
// a body too large to be an error, and bytes that are neither (a compressed answer).

import t from 'tap';
import { AnswerTap } from '../../src/audit/index.js';
import type { HttpResponse } from '../../src/egress/index.js';

interface Written {
  write(chunk: string | Uint8Array): boolean;
  end(chunk?: string | Uint8Array): void;
}

/** A response that keeps what is written to it: `res` for the tap, `out` to write as a face would. */
function response(): { res: HttpResponse; out: Written; written: string[] } {
  const written: string[] = [];
  const res = {
    write: (chunk: string | Uint8Array) => written.push(String(chunk)) > 0,
    end: (chunk?: string | Uint8Array) => {
      if (chunk !== undefined) written.push(String(chunk));
    },
  };
  return { res: res as unknown as HttpResponse, out: res, written };
}

const error = (id: number | null, code: number) =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: 'no' } });
const result = (id: number, text: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ text }] } });

t.test('a JSON body: its error by id, a batch read whole, a null id for any call', async (t) => {
  const one = response();
  const tap = new AnswerTap(one.res);
  one.out.end(error(7, -32602));
  t.equal(tap.codeFor(7), -32602);
  t.same(one.written, [error(7, -32602)], 'the answer is written as it was');
  const batch = response();
  const batchTap = new AnswerTap(batch.res);
  batch.out.write(`[${result(1, 'ok')},`);
  batch.out.end(`${error(2, -32601)}]`);
  t.equal(batchTap.codeFor(1), undefined);
  t.equal(batchTap.codeFor(2), -32601);
  const gone = response();
  const goneTap = new AnswerTap(gone.res);
  gone.out.end(error(null, -32001));
  t.equal(goneTap.codeFor(3), -32001, "an error answered with a null id (a lost session) is the call's");
});

t.test('SSE: events split across writes, one past the limit skipped, the error after it read', async (t) => {
  const { res, out } = response();
  const tap = new AnswerTap(res);
  const big = result(1, 'x'.repeat(70 * 1024));
  out.write('id: 1\nretry: 500\ndata: \n\nevent: message\ndata: ');
  out.write(big.slice(0, 40_000));
  out.write(`${big.slice(40_000)}\n\nevent: message\ndata: ${error(4, -32603).slice(0, 10)}`);
  out.end(`${error(4, -32603).slice(10)}\n\n`);
  t.equal(tap.codeFor(4), -32603);
  t.equal(tap.codeFor(1), undefined, 'the large event was a result');
});

t.test('bytes that are neither JSON nor SSE, and a JSON body past the limit, are not read', async (t) => {
  const gzip = response();
  const gzipTap = new AnswerTap(gzip.res);
  gzip.out.end(Buffer.from([0x1f, 0x8b, 0x08, 0x00]));
  t.equal(gzipTap.codeFor(1), undefined);
  const large = response();
  const largeTap = new AnswerTap(large.res);
  large.out.write(result(1, 'y'.repeat(70 * 1024)));
  large.out.end();
  t.equal(largeTap.codeFor(1), undefined);
});
