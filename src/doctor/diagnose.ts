// The order of the checks: reach the server (and read its auth and era off the same answer),
// find its transport, then check it in its era through Causeway's own clients, and say what each
// client era gets. Each step that fails stops the ones that need it, with the problem that says why.

import type { UpstreamSpec } from '../config/index.js';
import { CausewayError } from '../errors.js';
import type { Logger } from '../log.js';
import { ModernClient, ModernStdioPool, TransportMemo, detectTransport, eraOf } from '../upstream/index.js';
import { authFinding, credentialsOf } from './auth.js';
import { facesOf } from './faces.js';
import { checkLegacy, stdioOpener, type Findings } from './legacy.js';
import { checkModern } from './modern.js';
import { CLIENT_INFO, answerWords, httpKit, reach, type HttpKit, type Reached } from './reach.js';
import { blocking, settle, warning, wordsOf, type Era, type Report, type Transport } from './report.js';

export async function diagnose(spec: UpstreamSpec, log: Logger): Promise<Report> {
  const target = {
    ...(spec.urls[0] !== undefined ? { url: spec.urls[0] } : {}),
    ...(spec.transport === 'stdio' ? { command: [spec.command, ...spec.args].join(' ') } : {}),
    transportSetting: spec.transport,
    eraSetting: spec.era,
  };
  const findings = spec.transport === 'stdio' ? await overStdio(spec, log) : await overHttp(spec, log);
  const { transport, era, session } = findings;
  const faces =
    transport && era && !findings.problems.some((p) => p.blocking)
      ? { faces: facesOf(transport.found, era.found, session) }
      : {};
  return settle({ target, ...findings, ...faces });
}

async function overStdio(spec: UpstreamSpec, log: Logger): Promise<Findings> {
  const transport = { found: 'stdio' as const, how: 'upstream.transport stdio: the command is run as a child process' };
  if (spec.era === 'legacy') {
    const era = { found: 'legacy' as const, how: 'upstream.era legacy (not probed)' };
    return {
      transport,
      era,
      ...(await checkLegacy({ spec, transport: 'stdio', url: undefined, kit: undefined, log })),
    };
  }
  // The era probe Causeway makes: server/discover on a child's stdin; the child is stopped after.
  const pool = new ModernStdioPool(spec.name, stdioOpener(spec, log), log, {
    size: 1,
    requestTimeoutMs: spec.requestTimeoutMs,
    probeTimeoutMs: spec.connectTimeoutMs,
  });
  try {
    let answer;
    try {
      answer = await pool.probe(AbortSignal.timeout(spec.requestTimeoutMs), CLIENT_INFO);
    } catch (err) {
      return {
        transport,
        problems: [blocking('unreachable', `the command could not be started or answered nothing: ${wordsOf(err)}`)],
      };
    }
    const found: Era = eraOf(answer) ?? 'legacy';
    const era = {
      found,
      // The pool gives a refusal as HTTP would: the status says nothing on a pipe.
      how: `server/discover on the child's stdin: ${
        answer.message === undefined ? 'no 2026 answer in time' : answerWords(answer).replace(/^HTTP \d+, /, '')
      }`,
    };
    if (found === 'modern') {
      const client = new ModernClient(pool, spec.maxResponseBytes);
      return { transport, era, ...withEraCheck(spec, found, await checkModern(client, answer, spec.requestTimeoutMs)) };
    }
    // The probe's child is a legacy server's: stopped before the session's own child starts.
    await pool.close();
    const legacy = await checkLegacy({ spec, transport: 'stdio', url: undefined, kit: undefined, log });
    return { transport, era, ...withEraCheck(spec, found, legacy) };
  } finally {
    await pool.close();
  }
}

/** The findings, with the problem of an era setting the server contradicts: Causeway would speak the wrong protocol. */
function withEraCheck(spec: UpstreamSpec, found: Era, findings: Findings): Findings {
  if (spec.era === 'auto' || spec.era === found) return findings;
  const why =
    `upstream.era is ${spec.era}, but the server speaks the ${found} protocol: ` + `set upstream.era auto or ${found}`;
  return { ...findings, problems: [blocking('era_mismatch', why), ...findings.problems] };
}

async function overHttp(spec: UpstreamSpec, log: Logger): Promise<Findings> {
  const url = spec.urls[0]!;
  const kit = httpKit(spec, log);
  try {
    let reached: Reached;
    try {
      reached = await reach(kit, spec.requestTimeoutMs);
    } catch (err) {
      // A token endpoint that refused Causeway's client: the server itself may be fine.
      if (err instanceof CausewayError && err.reason === 'upstream_credentials') {
        return { problems: [blocking('credentials_refused', `no upstream token: ${wordsOf(err)}`)] };
      }
      return { problems: [blocking('unreachable', `cannot reach ${url}: ${wordsOf(err)}`)] };
    }
    if (reached.answer.status === 401 || reached.answer.status === 403) return await refused(spec, url, reached);
    const auth = { auth: { required: false, credentials: credentialsOf(spec) } };
    const era = eraOf(reached.answer);
    const found: Era = spec.transport === 'sse' ? 'legacy' : (era ?? 'legacy');
    const unknown = era === undefined ? ' (no era shown: taken as legacy, as Causeway does)' : '';
    const eraHow = `server/discover POST answered ${reached.said}${unknown}`;
    const transport = await transportOf(spec, kit, found);
    if ('problem' in transport) return { ...auth, era: { found, how: eraHow }, problems: [transport.problem] };
    const base = { ...auth, transport, era: { found, how: eraHow } };
    const checked =
      found === 'modern'
        ? await checkModern(kit.modern, reached.answer, spec.requestTimeoutMs)
        : await checkLegacy({ spec, transport: transport.found, url: transport.url, kit, log });
    return { ...base, ...withEraCheck(spec, found, checked) };
  } finally {
    await kit.http.close();
  }
}

/** A 401 or 403 at the first request: what the server's auth says, and why the doctor stops there. */
async function refused(spec: UpstreamSpec, url: string, reached: Reached): Promise<Findings> {
  const auth = await authFinding(url, spec, reached.challenge, spec.connectTimeoutMs);
  const status = reached.answer.status;
  if (auth.credentials === 'token_exchange' || auth.credentials === 'authorization_code') {
    const whose = auth.credentials === 'token_exchange' ? "a client's token to exchange" : "a user's sign-in";
    return {
      auth,
      problems: [
        warning(
          `HTTP ${status} without a token: upstream.credentials ${auth.credentials} needs ${whose}, ` +
            'which the doctor has not; nothing further was checked',
        ),
      ],
    };
  }
  if (auth.credentials === 'none') {
    const hint = 'give upstream.headers (authorization=Bearer …) or upstream.credentials';
    return {
      auth,
      problems: [
        blocking(
          'auth_required',
          `the server requires authorization (HTTP ${status}) and no credentials were given: ${hint}`,
        ),
      ],
    };
  }
  return {
    auth: { ...auth, required: true },
    problems: [blocking('credentials_refused', `the server refused the configured credentials (HTTP ${status})`)],
  };
}

/** The transport: the setting, or for auto the probe Causeway runs at its first session. */
async function transportOf(
  spec: UpstreamSpec,
  kit: HttpKit,
  era: Era,
): Promise<{ found: Transport; url: string; how: string } | { problem: Findings['problems'][number] }> {
  const url = spec.urls[0]!;
  if (spec.transport !== 'auto')
    return { found: spec.transport as Transport, url, how: `upstream.transport ${spec.transport} (not probed)` };
  if (era === 'modern')
    return { found: 'streamable-http', url, how: 'a 2026 server answered server/discover: Streamable HTTP' };
  try {
    const options = {
      memo: new TransportMemo(),
      log: kit.log,
      headers: spec.headers,
      timeoutMs: spec.requestTimeoutMs,
      connectTimeoutMs: spec.connectTimeoutMs,
      dispatcher: kit.http.dispatcher,
    };
    const found = await detectTransport(url, options);
    const how =
      found.transport === 'streamable-http'
        ? 'POST initialize was answered as Streamable HTTP; its session was ended with DELETE'
        : `POST was refused without JSON-RPC; GET ${new URL(found.url).pathname} opened a stream ` +
          'whose first event is endpoint';
    return { found: found.transport, url: found.url, how };
  } catch (err) {
    return {
      problem: blocking('no_transport', `neither Streamable HTTP nor HTTP+SSE found at ${url}: ${wordsOf(err)}`),
    };
  }
}
