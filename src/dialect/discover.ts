// server/discover answered from the upstream's InitializeResult [DISC][S26 DiscoverResult].

import { MODERN_VERSIONS } from '../envelope/index.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import { toModernServerCapabilities } from './capabilities.js';
import { withResultMeta, type CacheHint } from './results.js';

export function discoverResult(initializeResult: JsonObject, cache: CacheHint): JsonObject {
  const result: JsonObject = {
    supportedVersions: [...MODERN_VERSIONS],
    capabilities: toModernServerCapabilities(isObject(initializeResult.capabilities) ? initializeResult.capabilities : {}),
  };
  if (typeof initializeResult.instructions === 'string') result.instructions = initializeResult.instructions;
  return withResultMeta(result, { serverInfo: serverInfoOf(initializeResult), cache });
}

export function serverInfoOf(initializeResult: JsonObject): JsonObject | undefined {
  return isObject(initializeResult.serverInfo) ? initializeResult.serverInfo : undefined;
}
