// One 2026-07-28 child process, shared by every principal's requests [STDIO]: each request is
// sent with an id of Causeway's own (clients' ids collide on one stdin), and so is its
// progressToken; what the child sends is routed back by them:
// - a response to the request whose id it carries, with the client's id put back;
// - notifications/progress to the request whose token it carries;
// - a listen's notifications (its acknowledgment included) to the listen its
//   `io.modelcontextprotocol/subscriptionId` names, with the client's id put back there;
//   notifications/cancelled naming a listen ends that listen's stream [CANCEL];
// - notifications/message to the one request in flight that asked for logs (a logLevel in its
//   `_meta`): nothing on stdio says which request a log line belongs to, so with several asking
//   none gets it, rather than one principal reading another's logs.
// A request of the child's own is refused, pings answered: a 2026 server asks with input_required.
// A request whose caller goes away is cancelled with notifications/cancelled, as stdio wants.

import { CausewayError } from '../../errors.js';
import { isObject, type JsonObject, type JsonRpcMessage, type JsonRpcNotification } from '../../jsonrpc.js';
import type { JsonRpcRequest, RequestId } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { MessageChannel } from '../channel/index.js';
import { CallScope, classifyOrDrop, refusal, ScopeSet } from '../http/index.js';
import { AnswerWriter } from './answer.js';
import type { ModernAnswer } from '../modern/index.js';

const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

interface Exchange {
  id: RequestId;
  token: string | number | undefined;
  minted: string;
  wantsLogs: boolean;
  writer: AnswerWriter;
  scope: CallScope;
  /** Ends the request with an error: its answer rejected, or its stream broken. */
  fail(err: unknown): void;
}

export class ModernChild {
  private readonly exchanges = new Map<string, Exchange>();
  private readonly lifetime = new ScopeSet();
  private next = 0;
  lost = false;
  readonly openedAt = Date.now();

  constructor(
    readonly channel: MessageChannel,
    private readonly log: Logger,
    private readonly onLost: (child: ModernChild, reason: Error | undefined) => void,
  ) {
    channel.onMessage((m) => this.route(m));
    channel.onClose((reason) => this.lose(reason));
    if (channel.closed) this.lose(new CausewayError('upstream_unavailable', 'the child process is stopped'));
  }

  /** Requests in flight: the pool sends the next one to the child with fewest. */
  get load(): number {
    return this.exchanges.size;
  }

  /** Sends one request; the answer comes once the child sends its first message for it. */
  send(msg: JsonRpcRequest, signal: AbortSignal, timeoutMs: number | undefined): Promise<ModernAnswer> {
    if (this.lost) return Promise.reject(new CausewayError('upstream_unavailable', 'the child process is stopped'));
    return new Promise<ModernAnswer>((resolve, reject) => {
      const minted = `causeway-${++this.next}`;
      const params: JsonObject = isObject(msg.params) ? { ...msg.params } : {};
      const meta: JsonObject = isObject(params._meta) ? { ...params._meta } : {};
      const token = meta.progressToken;
      const ownToken = typeof token === 'string' || typeof token === 'number' ? token : undefined;
      if (ownToken !== undefined) meta.progressToken = minted;
      if (isObject(msg.params) && isObject(msg.params._meta)) params._meta = meta;
      const scope = new CallScope(signal, [this.lifetime], timeoutMs);
      const ex: Exchange = {
        id: msg.id,
        token: ownToken,
        minted,
        wantsLogs: meta[LOG_LEVEL] !== undefined,
        scope,
        writer: new AnswerWriter(
          () => this.cancel(ex, 'the client went away'),
          (answer) => resolve(answer),
        ),
        fail: (err) => {
          const error = scope.settle(err) as Error;
          if (ex.writer.started) ex.writer.fail(error);
          else reject(error);
        },
      };
      const fail = (err: unknown): void => {
        if (this.exchanges.get(minted) !== ex) return;
        this.forget(ex);
        ex.fail(err);
      };
      const onAbort = (): void => {
        if (this.exchanges.get(minted) !== ex) return;
        const reason: unknown = scope.signal.reason;
        this.cancel(ex, 'cancelled');
        ex.fail(reason);
      };
      this.exchanges.set(minted, ex);
      if (scope.aborted) return onAbort();
      scope.signal.addEventListener('abort', onAbort, { once: true });
      this.channel.send({ ...msg, id: minted, params }).catch(fail);
    });
  }

  /** Stops the child: its requests fail as a lost stream would. */
  close(): Promise<void> {
    return this.channel.close();
  }

  private forget(ex: Exchange): void {
    this.exchanges.delete(ex.minted);
    ex.scope.dispose();
  }

  /** The caller left: the child is told to stop the request [CANCEL]. */
  private cancel(ex: Exchange, reason: string): void {
    if (this.exchanges.get(ex.minted) !== ex) return;
    this.forget(ex);
    if (this.lost) return;
    const params = { requestId: ex.minted, reason };
    const n: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/cancelled', params };
    this.channel.send(n).catch((err: unknown) => this.log.debug({ err }, 'could not cancel a request on the child'));
  }

  private lose(reason: Error | undefined): void {
    if (this.lost) return;
    this.lost = true;
    const error = reason ?? new CausewayError('upstream_unavailable', 'the child process was stopped');
    for (const ex of [...this.exchanges.values()]) {
      this.forget(ex);
      ex.fail(error);
    }
    this.lifetime.end();
    this.onLost(this, reason);
  }

  private route(raw: JsonRpcMessage): void {
    const m = classifyOrDrop(raw, this.log, 'dropping an invalid message of the child');
    if (m === undefined) return;
    if (m.kind === 'response') {
      const ex = typeof m.message.id === 'string' ? this.exchanges.get(m.message.id) : undefined;
      if (ex === undefined) return this.log.debug('dropping a response of the child for no request in flight');
      this.forget(ex);
      ex.writer.respond({ ...m.message, id: ex.id });
      return;
    }
    if (m.kind === 'request') {
      const { id } = m.message;
      const pong = { jsonrpc: '2.0' as const, id, result: {} };
      const answer = m.message.method === 'ping' ? pong : refusal(id, 'Not served');
      this.channel.send(answer).catch((err: unknown) => this.log.debug({ err }, 'could not answer the child'));
      return;
    }
    this.notification(m.message);
  }

  private notification(n: JsonRpcNotification): void {
    const params = isObject(n.params) ? n.params : {};
    const meta = isObject(params._meta) ? params._meta : undefined;
    if (n.method === 'notifications/progress') {
      const ex = typeof params.progressToken === 'string' ? this.exchanges.get(params.progressToken) : undefined;
      if (ex?.token !== undefined) ex.writer.notify({ ...n, params: { ...params, progressToken: ex.token } });
      return;
    }
    const sub = meta?.[SUBSCRIPTION];
    if (typeof sub === 'string') {
      const ex = this.exchanges.get(sub);
      const own = { ...meta, [SUBSCRIPTION]: ex?.id ?? null };
      if (ex !== undefined) ex.writer.notify({ ...n, params: { ...params, _meta: own } });
      return;
    }
    if (n.method === 'notifications/cancelled') {
      const ex = typeof params.requestId === 'string' ? this.exchanges.get(params.requestId) : undefined;
      if (ex === undefined) return;
      this.forget(ex);
      if (ex.writer.started) ex.writer.end();
      else ex.fail(new CausewayError('upstream_bad_response', 'The upstream cancelled the request before answering'));
      return;
    }
    if (n.method === 'notifications/message') {
      const asking = [...this.exchanges.values()].filter((ex) => ex.wantsLogs);
      if (asking.length === 1) asking[0]!.writer.notify(n);
      else if (asking.length > 1) this.log.debug({ requests: asking.length }, 'a log line for no one request: dropped');
    }
  }
}
