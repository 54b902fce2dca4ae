// server/discover answered from the upstream's InitializeResult [DISC][S26 DiscoverResult].

import { MODERN_VERSIONS } from '../envelope/index.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import { toModernServerCapabilities } from './capabilities.js';
import { TASKS_EXTENSION } from './tasks.js';
import { withResultMeta, type CacheHint } from './results.js';

/** `runsTasks`: Causeway itself runs some of the upstream's tools as tasks (upstream.taskTools). */
export function discoverResult(initializeResult: JsonObject, cache: CacheHint, runsTasks = false): JsonObject {
  const capabilities = toModernServerCapabilities(
    isObject(initializeResult.capabilities) ? initializeResult.capabilities : {},
  );
  if (runsTasks)
    capabilities.extensions = {
      ...(isObject(capabilities.extensions) ? capabilities.extensions : {}),
      [TASKS_EXTENSION]: {},
    };
  const result: JsonObject = { supportedVersions: [...MODERN_VERSIONS], capabilities };
  if (typeof initializeResult.instructions === 'string') result.instructions = initializeResult.instructions;
  return withResultMeta(result, { serverInfo: serverInfoOf(initializeResult), cache });
}

export function serverInfoOf(initializeResult: JsonObject): JsonObject | undefined {
  return isObject(initializeResult.serverInfo) ? initializeResult.serverInfo : undefined;
}
