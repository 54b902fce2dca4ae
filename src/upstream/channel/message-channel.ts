// One upstream session over a transport that carries every JSON-RPC message of the session on
// one channel, in both directions: a stdio child process (newline-delimited JSON) or a 2024-11-05
// HTTP+SSE connection (an SSE stream for the server's messages, POSTs to its `endpoint` for the
// client's). Unlike Streamable HTTP there is no per-request stream, so answers are matched to
// requests by JSON-RPC id by the client that uses the channel.

import type { JsonRpcMessage } from '../../jsonrpc.js';

export interface MessageChannel {
  /** Sends one message; rejects once the channel is closed or when the write fails. */
  send(message: JsonRpcMessage): Promise<void>;
  /** Every message the server sends, parsed, in order; invalid ones are dropped and logged by the channel. */
  onMessage(handler: (message: JsonRpcMessage) => void): void;
  /**
   * Called once when the channel ends: closed by us (reason undefined), or lost (the process exited, the stream
   * dropped).
   */
  onClose(handler: (reason: Error | undefined) => void): void;
  readonly closed: boolean;
  /** Ends the channel: stdin closed then the process signalled after a grace period, or the SSE stream closed. */
  close(): Promise<void>;
}

/** Opens a new channel (one upstream session), or rejects with an upstream_* CausewayError. */
export interface ChannelOpener {
  open(signal?: AbortSignal): Promise<MessageChannel>;
  /** Releases what the opener itself holds (an HTTP agent), once every channel is closed. */
  close?(): Promise<void>;
}
