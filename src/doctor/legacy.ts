// A legacy server, checked through the session client Causeway would use for it: Streamable HTTP
// (UpstreamClient), or one MessageChannel per session (ChannelClient over HTTP+SSE or a stdio
// child). One session is opened with initialize, its GET stream tried, its lists read, and the
// session ended (DELETE, the connection closed, the child stopped) whatever happened.

import type { UpstreamSpec } from '../config/index.js';
import { CausewayError } from '../errors.js';
import { isErrorResponse, isObject, type JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import {
  ChannelClient,
  IdMinter,
  SseChannelOpener,
  StdioOpener,
  UpstreamClient,
  tracedRequest,
  type SessionRef,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import { listChanged, listProblems, readLists, toolFindings, type PageReader } from './lists.js';
import { CLIENT_INFO, type HttpKit } from './reach.js';
import { blocking, warning, wordsOf, type Problem, type Report, type Transport } from './report.js';

export type Findings = Partial<Omit<Report, 'problems' | 'status' | 'exitCode'>> & { problems: Problem[] };

export interface LegacyTarget {
  spec: UpstreamSpec;
  transport: Transport;
  /** The URL to speak the transport at (for sse, the SSE endpoint found). */
  url: string | undefined;
  kit: HttpKit | undefined;
  log: Logger;
}

/** The child's command, as Causeway starts it (upstream.command, args, env, cwd). */
export function stdioOpener(spec: UpstreamSpec, log: Logger): StdioOpener {
  const cwd = spec.cwd === '' ? undefined : spec.cwd;
  const cmd = { command: spec.command, args: spec.args, env: spec.env, cwd, maxLineBytes: spec.maxResponseBytes };
  return new StdioOpener(spec.name, cmd, log);
}

/** The session client Causeway builds for this transport, with one session at most. */
function clientFor({ spec, transport, url, kit, log }: LegacyTarget): UpstreamSessionClient {
  const { requestTimeoutMs, connectTimeoutMs, maxResponseBytes, headers } = spec;
  if (transport === 'stdio')
    return new ChannelClient(spec.name, stdioOpener(spec, log), log, { requestTimeoutMs, maxChannels: 1 });
  if (transport === 'sse') {
    const opener = new SseChannelOpener({
      url: url!,
      dispatcher: kit!.http.dispatcher,
      headers,
      connectTimeoutMs,
      requestTimeoutMs,
      maxEventBytes: maxResponseBytes,
      log,
    });
    return new ChannelClient(spec.name, opener, log, { requestTimeoutMs, maxChannels: 1 });
  }
  const { targets, credentials, http } = kit!;
  return new UpstreamClient(
    { name: spec.name, targets, headers, credentials, connectTimeoutMs, requestTimeoutMs, maxResponseBytes, http },
    log,
  );
}

/** A system error under a refusal (ENOENT, ECONNREFUSED...): the server was never reached. */
function neverReached(err: unknown): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  return cause instanceof Error && typeof (cause as NodeJS.ErrnoException).code === 'string';
}

export async function checkLegacy(target: LegacyTarget): Promise<Findings> {
  const { spec } = target;
  const client = clientFor(target);
  const params = { protocolVersion: spec.protocolVersion, capabilities: {}, clientInfo: CLIENT_INFO };
  let session: SessionRef & { initializeResult: JsonObject };
  try {
    session = await client.initialize(params, AbortSignal.timeout(spec.requestTimeoutMs));
  } catch (err) {
    await client.destroy();
    const kind = neverReached(err) ? 'unreachable' : 'handshake_refused';
    return { problems: [blocking(kind, `initialize failed: ${wordsOf(err)}`)] };
  }
  try {
    return await inSession(target, client, session);
  } finally {
    // Ends the session: DELETE over Streamable HTTP, the connection or the child otherwise.
    await client.terminate(session);
    await client.close();
  }
}

async function inSession(
  target: LegacyTarget,
  client: UpstreamSessionClient,
  session: SessionRef & { initializeResult: JsonObject },
): Promise<Findings> {
  const result = session.initializeResult;
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const info = isObject(result.serverInfo) ? result.serverInfo : {};
  const problems: Problem[] = [];
  const server = {
    ...(typeof info.name === 'string' ? { name: info.name } : {}),
    ...(typeof info.version === 'string' ? { version: info.version } : {}),
    protocolVersion: session.protocolVersion,
    capabilities,
    instructionsLength: typeof result.instructions === 'string' ? result.instructions.length : 0,
  };
  const channel = target.transport !== 'streamable-http';
  const sessionful = channel || session.sessionId !== undefined;
  const how = channel
    ? `one ${target.transport === 'stdio' ? 'child process' : 'HTTP+SSE connection'} is one session`
    : sessionful
      ? 'initialize returned an Mcp-Session-Id'
      : 'initialize returned no Mcp-Session-Id';
  const get = channel
    ? { getStream: 'not applicable' as const, getStreamHow: "everything arrives on the session's own channel" }
    : await tryGet(client, session);
  if (!sessionful)
    problems.push(
      warning(
        'session-less: multi-round calls (the server asking the client) and changes outside a call ' +
          'cannot reach clients',
      ),
    );
  const changed = listChanged(capabilities);
  if (get.getStream === 'refused' && Object.values(changed).some(Boolean)) {
    problems.push(
      warning('listChanged is declared but no GET stream is served: list changes are heard only during calls'),
    );
  }
  const ids = new IdMinter('doctor');
  const read: PageReader = async (method, cursor) => {
    const request = {
      jsonrpc: '2.0' as const,
      id: ids.requestId(),
      method,
      params: cursor === undefined ? {} : { cursor },
    };
    const r = await tracedRequest(client, session, request, {}, AbortSignal.timeout(target.spec.requestTimeoutMs));
    return isErrorResponse(r) ? { refused: `${r.error.code} ${r.error.message}` } : r.result;
  };
  const { lists, tools } = await readLists(read, capabilities);
  const found = toolFindings(tools, 'legacy');
  problems.push(...listProblems(lists), ...found.problems);
  return {
    server,
    session: { sessionful, how, ...get, ended: true },
    listChanged: changed,
    lists,
    tools: found.findings,
    problems,
  };
}

/** How long the GET's answer may take: a stream's headers come at once, before any event. */
const GET_WAIT_MS = 10_000;

/** A GET with the session id: an SSE stream (served), 405 (refused), or a failure; closed at once. */
async function tryGet(
  client: UpstreamSessionClient,
  session: SessionRef,
): Promise<Pick<NonNullable<Report['session']>, 'getStream' | 'getStreamHow'>> {
  if (session.sessionId === undefined)
    return { getStream: 'not applicable', getStreamHow: 'no session id to GET with' };
  const stop = new AbortController();
  try {
    const opened = await client.openStream(
      session,
      {},
      AbortSignal.any([stop.signal, AbortSignal.timeout(GET_WAIT_MS)]),
    );
    if (opened === 'unsupported') return { getStream: 'refused', getStreamHow: 'GET answered 405' };
    stop.abort();
    await opened.done.catch(() => undefined);
    return { getStream: 'served', getStreamHow: 'GET answered text/event-stream' };
  } catch (err) {
    stop.abort();
    return { getStream: 'failed', getStreamHow: err instanceof CausewayError ? err.message : wordsOf(err) };
  }
}
