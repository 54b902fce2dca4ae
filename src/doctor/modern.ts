// A 2026-07-28 server, checked through the ModernClient Causeway relays with (over HTTP, or a
// stdio child of a ModernStdioPool): its server/discover result, then its lists, each request
// stateless with its own _meta. No session to end; a child started is stopped by the caller.

import { META_SERVER_INFO } from '../envelope/index.js';
import { isErrorResponse, isObject, type JsonObject } from '../jsonrpc.js';
import { MODERN_VERSION, type ModernClient, type ProbeAnswer } from '../upstream/index.js';
import type { Findings } from './legacy.js';
import { listChanged, listProblems, readLists, toolFindings, type PageReader } from './lists.js';
import { CLIENT_INFO, answerWords } from './reach.js';
import { blocking } from './report.js';

const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
  'io.modelcontextprotocol/clientCapabilities': {},
};

export async function checkModern(client: ModernClient, discover: ProbeAnswer, timeoutMs: number): Promise<Findings> {
  const message = discover.message;
  const result = isObject(message) && isObject(message.result) ? message.result : undefined;
  if (result === undefined)
    return {
      problems: [blocking('handshake_refused', `server/discover gave no DiscoverResult (${answerWords(discover)})`)],
    };
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  // 2026 puts serverInfo in the result's _meta; an older draft's DiscoverResult had it as a field.
  const meta = isObject(result._meta) ? result._meta[META_SERVER_INFO] : undefined;
  const info = isObject(meta) ? meta : isObject(result.serverInfo) ? result.serverInfo : {};
  const versions = Array.isArray(result.supportedVersions)
    ? result.supportedVersions.filter((v): v is string => typeof v === 'string')
    : [];
  const server = {
    ...(typeof info.name === 'string' ? { name: info.name } : {}),
    ...(typeof info.version === 'string' ? { version: info.version } : {}),
    protocolVersion: MODERN_VERSION,
    supportedVersions: versions,
    capabilities,
    instructionsLength: typeof result.instructions === 'string' ? result.instructions.length : 0,
  };
  let n = 0;
  const read: PageReader = async (method, cursor) => {
    const params: JsonObject = { _meta: META, ...(cursor === undefined ? {} : { cursor }) };
    const { response } = await client.request({ jsonrpc: '2.0', id: `doctor-${++n}`, method, params }, undefined, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    return isErrorResponse(response)
      ? { refused: `${response.error.code} ${response.error.message}` }
      : response.result;
  };
  const { lists, tools } = await readLists(read, capabilities);
  const found = toolFindings(tools, 'modern');
  return {
    server,
    session: {
      sessionful: false,
      how: '2026-07-28 is stateless: every request carries its own _meta',
      getStream: 'not applicable',
      getStreamHow: 'changes come on subscriptions/listen streams',
      ended: true,
    },
    listChanged: listChanged(capabilities),
    lists,
    tools: found.findings,
    problems: [...listProblems(lists), ...found.problems],
  };
}
