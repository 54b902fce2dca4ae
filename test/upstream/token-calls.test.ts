// credentials/token-calls.ts around oauth4webapi: what a token endpoint's answers become (a
// token, or an upstream_credentials error naming the server's error code), against a plain HTTP
// server whose answer each test sets. No token of a refused answer reaches the log or the error.

import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { tokenEndpoint, tokenRequest } from '../../src/upstream/credentials/token-calls.js';
import { logSink } from './log-sink.js';

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

let answer: Answer = { status: 200, body: {} };
let seen: { authorization: string | undefined; form: URLSearchParams } | undefined;

const server = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    seen = { authorization: req.headers.authorization, form: new URLSearchParams(body) };
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => void server.close());
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;

/** One client_credentials request answered with `a`, and what was logged. */
function ask(a: Answer, client = { id: 'causeway', secret: 's3cret' }) {
  answer = a;
  const sink = logSink();
  const params = new URLSearchParams({ scope: 'tools' });
  return { sink, result: tokenRequest(tokenEndpoint(url), client, 'client_credentials', params, sink.log) };
}

t.test('a Bearer token: its value, lifetime and refresh token; the client in Basic, form-encoded', async (t) => {
  const body = { access_token: 'tok-1', token_type: 'Bearer', expires_in: 60, refresh_token: 'ref-1' };
  const { result } = ask({ status: 200, body }, { id: 'cause way:1', secret: 'p&ss word' });
  t.same(await result, { token: 'tok-1', expiresInS: 60, refreshToken: 'ref-1' });
  const basic = Buffer.from('cause+way%3A1:p%26ss+word').toString('base64');
  t.equal(seen?.authorization, `Basic ${basic}`, 'RFC 6749 §2.3.1: id and secret form-encoded before Basic');
  t.equal(seen?.form.get('grant_type'), 'client_credentials');
  t.equal(seen?.form.get('scope'), 'tools');
  t.notOk(seen?.form.has('client_id'), 'a confidential client is not named in the form');
});

t.test('a public client (no secret) is named in the form, with no Authorization', async (t) => {
  const { result } = ask(
    { status: 200, body: { access_token: 'tok-2', token_type: 'bearer' } },
    { id: 'doc', secret: '' },
  );
  t.same(await result, { token: 'tok-2', expiresInS: undefined, refreshToken: undefined });
  t.equal(seen?.authorization, undefined);
  t.equal(seen?.form.get('client_id'), 'doc');
});

t.test('a refusal: the server error code in the message and the log, its description in neither', async (t) => {
  const { sink, result } = ask({ status: 400, body: { error: 'invalid_scope', error_description: 'not-for-logs' } });
  await t.rejects(result, { reason: 'upstream_credentials', message: /refused the token request \(invalid_scope\)$/ });
  t.match(sink.text(), /"error":"invalid_scope"/);
  t.notMatch(sink.text(), /not-for-logs/);
});

t.test('a refused client secret: a 401 with a challenge still names invalid_client', async (t) => {
  const headers = { 'www-authenticate': 'Basic realm="as"' };
  const { result } = ask({ status: 401, body: { error: 'invalid_client' }, headers });
  await t.rejects(result, { message: /refused the token request \(invalid_client\)$/ });
});

for (const tokenType of ['DPoP', 'mac']) {
  t.test(`a ${tokenType} token is refused, and its value reaches neither the log nor the error`, async (t) => {
    const { sink, result } = ask({ status: 200, body: { access_token: 'secret-tok', token_type: tokenType } });
    const err = await result.then(
      () => undefined,
      (e: unknown) => e,
    );
    t.match(err, { reason: 'upstream_credentials', message: /not a Bearer token/ });
    t.notMatch(inspect(err, { depth: 10 }), /secret-tok/, 'not in the error or its causes');
    t.notMatch(sink.text(), /secret-tok/);
  });
}

t.test('an answer without a token is a refusal', async (t) => {
  const { sink, result } = ask({ status: 200, body: { token_type: 'Bearer', refresh_token: 'secret-ref' } });
  const err = await result.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.match(err, { message: /refused the token request$/ });
  t.notMatch(inspect(err, { depth: 10 }), /secret-ref/);
  t.notMatch(sink.text(), /secret-ref/);
});

t.test('a server that cannot be reached, and plain http off this machine, are not sent to', async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/token`;
  await new Promise((resolve) => closed.close(resolve));
  const sink = logSink();
  const client = { id: 'causeway', secret: 's3cret' };
  const form = () => new URLSearchParams();
  await t.rejects(tokenRequest(tokenEndpoint(gone), client, 'client_credentials', form(), sink.log), {
    message: /could not be reached$/,
  });
  const remote = tokenEndpoint('http://as.example/token');
  await t.rejects(tokenRequest(remote, client, 'client_credentials', form(), sink.log), {
    message: /could not be reached$/,
  });
  t.match(sink.text(), /HTTPS/, 'the log says why: only https leaves this machine');
});
