// Sessions that live on one channel each: a stdio child process or a 2024-11-05 HTTP+SSE
// connection (channel-client.ts over a MessageChannel), and the client that finds out which of the
// HTTP two an upstream speaks (auto-client.ts, detect-transport.ts).

export { AutoClient, type AutoClientOptions, type FoundTransport } from './auto-client.js';
export { ChannelClient } from './channel-client.js';
export {
  type Detected,
  type DetectOptions,
  detectTransport,
  type LegacyTransport,
  TransportMemo,
} from './detect-transport.js';
export type { ChannelOpener, MessageChannel } from './message-channel.js';
export { SseChannelOpener, type SseChannelOptions } from './sse-channel.js';
export { StdioOpener } from './stdio-channel.js';
