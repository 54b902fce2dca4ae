// The 2026-07-28 side of the upstream wing: which era an upstream speaks (era.ts), and the
// stateless client of a modern upstream (modern-client.ts), the body of an answer written here
// (answer-body.ts).

export {
  ERAS,
  eraOf,
  isEraRefusal,
  MemoryEraMemo,
  MODERN_VERSION,
  probeRequest,
  RedisEraMemo,
  UpstreamEra,
  type Era,
  type EraMemo,
  type EraSetting,
  type EraSource,
  type ProbeAnswer,
} from './era.js';
export {
  httpWire,
  ModernClient,
  type ModernAnswer,
  type ModernCallOptions,
  type ModernRequestOptions,
  type ModernWire,
} from './modern-client.js';
export { RelayedListens } from './listens.js';
export { AnswerBody } from './answer-body.js';
