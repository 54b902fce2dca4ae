// One upstream session over a channel: its calls in flight (matched to answers by JSON-RPC id),
// its open streams and the asks routed to its calls. What the server sends outside an answer is
// routed as a Streamable HTTP call stream would carry it, as far as a single channel allows:
// - a progress notification goes to the call whose progressToken it carries;
// - notifications/message goes to every call in flight (the legacy protocol does not say which
//   call a log line belongs to);
// - other notifications (list_changed, resources/updated) go to the session's open streams, or,
//   with none open, to its oldest call in flight (never both: listeners would hear them twice);
// - a server->client request (elicitation, sampling, roots) goes to the oldest call in flight
//   that can ask the client (tools/call, prompts/get, resources/read first, and of those one
//   not already waiting on an answer first), since nothing in the legacy protocol says which
//   call it belongs to; one that names its task (related-task _meta) goes to the tasks/result
//   following that task; pings are answered at once.

import {
  isObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { InFlightByKey } from '../../in-flight.js';
import { refusal, classifyOrDrop } from '../http/index.js';
import type { StreamHandlers } from '../core/index.js';
import type { MessageChannel } from './message-channel.js';
import { ASKING_METHODS } from '../core/index.js';
import { RELATED_TASK_META } from '../../dialect/index.js';

export interface Pending {
  method: string;
  handlers: StreamHandlers;
  progressToken: string | number | undefined;
  /** The upstream task a tasks/result call follows: that task's asks are its own. */
  followsTask?: string;
  asked: boolean;
  /** Asks routed to this call that have not been answered yet. */
  readonly outstanding: Set<string>;
  settle(outcome: { response: JsonRpcResponse } | { error: unknown }): void;
}

export interface OpenStream {
  handlers: StreamHandlers;
  end(err?: unknown): void;
}

export class ChannelSession {
  /** Calls in flight, by idKey of their JSON-RPC id, oldest first. */
  readonly pending = new InFlightByKey<Pending>();
  readonly streams = new Set<OpenStream>();
  /** Unanswered server->client requests, by idKey of their id, and the call each was routed to. */
  readonly asks = new InFlightByKey<Pending>();
  lastUsedAt = Date.now();
  readonly openedAt = Date.now();
  lost = false;

  constructor(
    readonly id: string,
    readonly channel: MessageChannel,
    private readonly log: Logger,
  ) {}

  get idle(): boolean {
    return this.pending.size === 0 && this.streams.size === 0;
  }

  /** One message the server sent: an answer to a call, a request of its own, or a notification. */
  route(raw: JsonRpcMessage): void {
    const m = classifyOrDrop(raw, this.log, 'dropping an invalid upstream message');
    if (m === undefined) return;
    if (m.kind === 'response') {
      const id = m.message.id;
      if (id === null || id === undefined) {
        // An id-less error answers the one call in flight, if there is just one.
        const only = this.pending.size === 1 ? this.pending.values()[0] : undefined;
        if (only && 'error' in m.message) {
          only.settle({ response: m.message });
          return;
        }
        this.log.debug('dropping an upstream response without id');
        return;
      }
      const p = this.pending.get(idKey(id));
      if (p) p.settle({ response: m.message });
      else this.log.debug('dropping an upstream response for no call in flight');
      return;
    }
    if (m.kind === 'request') return this.serverRequest(m.message);
    this.notification(m.message);
  }

  private notification(n: JsonRpcNotification): void {
    const calls = this.pending.values();
    if (n.method === 'notifications/progress') {
      const token = isObject(n.params) ? n.params.progressToken : undefined;
      const owner = calls.find((p) => p.progressToken !== undefined && p.progressToken === token);
      if (owner) this.deliver(() => owner.handlers.onNotification?.(n), n.method);
      return;
    }
    if (n.method === 'notifications/message') {
      for (const p of calls) this.deliver(() => p.handlers.onNotification?.(n), n.method);
      return;
    }
    if (this.streams.size > 0) {
      for (const stream of [...this.streams]) this.deliver(() => stream.handlers.onNotification?.(n), n.method);
      return;
    }
    const oldest = calls[0];
    if (oldest) this.deliver(() => oldest.handlers.onNotification?.(n), n.method);
  }

  private serverRequest(r: JsonRpcRequest): void {
    if (r.method === 'ping') {
      this.reply({ jsonrpc: '2.0', id: r.id, result: {} }, r.method);
      return;
    }
    // A call already waiting on an answer is less likely to ask again than one that has not asked.
    const askers = this.pending.values().filter((p) => p.handlers.onServerRequest !== undefined);
    const task = relatedTaskOf(r);
    const rank = (p: Pending): number => (ASKING_METHODS.has(p.method) ? 0 : 2) + (p.outstanding.size > 0 ? 1 : 0);
    const target =
      task === undefined
        ? askers
            .filter((p) => p.followsTask === undefined)
            .reduce<Pending | undefined>(
              (best, p) => (best === undefined || rank(p) < rank(best) ? p : best),
              undefined,
            )
        : askers.find((p) => p.followsTask === task);
    if (target === undefined) {
      this.reply(refusal(r.id, 'No call in flight can take this request'), r.method);
      return;
    }
    target.asked = true;
    const key = idKey(r.id);
    target.outstanding.add(key);
    this.asks.set(key, target);
    this.deliver(() => target.handlers.onServerRequest!(r), r.method);
  }

  private reply(r: JsonRpcResponse, method: string): void {
    this.channel
      .send(r)
      .catch((err: unknown) => this.log.warn({ err, method }, 'could not answer an upstream request'));
  }

  private deliver(fn: () => void, method: string): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, method }, 'upstream message handler threw');
    }
  }
}

export const idKey = (id: RequestId): string => `${typeof id}:${String(id)}`;

/** The task a 2025-11-25 server says its request belongs to [L-TASKS related-task]. */
function relatedTaskOf(r: JsonRpcRequest): string | undefined {
  const meta = isObject(r.params) && isObject(r.params._meta) ? r.params._meta : undefined;
  const related = meta?.[RELATED_TASK_META];
  return isObject(related) && typeof related.taskId === 'string' ? related.taskId : undefined;
}
