// The rule that tells a lost upstream session from the upstream's own refusal (core/lost-session.ts),
// on the bodies real servers send: the legacy SDK transport's 404, server-everything's 400 (with the
// request's id on a POST, none on a GET), the SDK README example's plain-text 400, and answers that
// are not about the session at all.

import t from 'tap';
import { losesSession } from '../../src/upstream/core/lost-session.js';

const rpc = (code: number, message: string, id?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message }, ...(id === undefined ? {} : { id }) });

t.test('a 400 or 404 that rejects the session, whatever its id, is a lost session', async (t) => {
  t.ok(losesSession(400, rpc(-32000, 'Bad Request: No valid session ID provided', 7), 7), "server-everything's POST");
  t.ok(
    losesSession(400, rpc(-32000, 'Bad Request: No valid session ID provided'), undefined),
    "server-everything's GET",
  );
  t.ok(losesSession(400, 'Invalid or missing session ID', undefined), 'plain text naming the session');
  t.ok(losesSession(404, rpc(-32001, 'Session not found', null), 3), "the SDK transport's 404");
  t.ok(losesSession(404, '', undefined), 'a bare 404 to a GET or a notification');
});

t.test('a 400 or 404 to a request that holds no answer to it is a lost session', async (t) => {
  t.ok(losesSession(400, rpc(-32000, 'Bad Request', null), 5), 'an error with id null');
  t.ok(losesSession(400, rpc(-32000, 'Bad Request', 6), 5), 'an error for another id');
  t.ok(losesSession(400, '<html>bad request</html>', 5), 'no JSON-RPC at all');
  t.ok(losesSession(400, undefined, 5), 'a body too large to read');
});

t.test("the upstream's own answers and other refusals are not", async (t) => {
  t.notOk(losesSession(400, rpc(-32602, 'Invalid params', 5), 5), 'an in-band error answering the request');
  t.notOk(losesSession(404, rpc(-32601, 'Method not found', 5), 5), 'a 404 answering the request');
  t.notOk(losesSession(400, rpc(-32022, 'Unsupported protocol version', null), 5), 'an era refusal (-32022)');
  t.notOk(
    losesSession(400, rpc(-32600, 'Invalid request', null), undefined),
    'a 400 to a notification that names no session',
  );
  t.notOk(losesSession(400, 'bad Last-Event-ID', undefined), 'a plain 400 to a GET that names no session');
  t.notOk(losesSession(403, rpc(-32000, 'No valid session ID provided', 5), 5), 'another status');
  t.notOk(losesSession(500, rpc(-32603, 'session store down', null), 5), 'a server error');
});
