// A legacy MCP server run as a child process, spoken to over stdio [L-STDIO]: one JSON-RPC
// message per line on its stdin and stdout (newline-delimited JSON, each line at most
// maxLineBytes), its stderr read line by line into the log, rate-limited. Closing ends stdin,
// waits for the process to exit, then signals it (SIGTERM, then SIGKILL). A process that exits
// on its own, or writes a line too long to be a message, is a lost channel.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CausewayError } from '../../errors.js';
import type { JsonRpcMessage } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { errorCode } from '../core/index.js';
import type { ChannelOpener, MessageChannel } from './message-channel.js';
import { badResponse, decodeMessages } from '../http/index.js';

export interface StdioCommand {
  command: string;
  args: readonly string[];
  /** Added to the few variables a child gets from Causeway's own environment (INHERITED_ENV). */
  env: Readonly<Record<string, string>>;
  /** Working directory; undefined: Causeway's. */
  cwd: string | undefined;
  /** Longest line accepted on stdout; a longer one breaks the channel. */
  maxLineBytes: number;
  /** After stdin is closed, how long the process has to exit before SIGTERM, and again before SIGKILL. */
  stopGraceMs?: number;
  /** Most stderr lines logged per second; the rest are counted. */
  stderrLinesPerSecond?: number;
}

/**
 * What a child inherits from Causeway's environment: enough to find and run a program, nothing
 * that may carry Causeway's own secrets (a Redis password, the principal hash key). Anything else
 * it needs goes in upstream.env.
 */
export const INHERITED_ENV: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'TMPDIR',
  'TZ',
  'SystemRoot',
  'ComSpec',
  'PATHEXT',
  'APPDATA',
  'LOCALAPPDATA',
  'TEMP',
  'TMP',
  'USERPROFILE',
];

const DEFAULT_STOP_GRACE_MS = 2_000;
const DEFAULT_STDERR_LINES_PER_SECOND = 20;
const MAX_STDERR_LINE_CHARS = 2_000;
/** After `exit`, how long to wait for stdout to end (a grandchild may hold it open). */
const CLOSE_AFTER_EXIT_MS = 200;

export function childEnv(
  extra: Readonly<Record<string, string>>,
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED_ENV) {
    const v = from[k];
    if (v !== undefined) env[k] = v;
  }
  return { ...env, ...extra };
}

export class StdioOpener implements ChannelOpener {
  constructor(
    private readonly upstream: string,
    private readonly cmd: StdioCommand,
    private readonly log: Logger,
  ) {}

  open(signal?: AbortSignal): Promise<MessageChannel> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(this.cmd.command, [...this.cmd.args], {
        cwd: this.cmd.cwd,
        env: childEnv(this.cmd.env),
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (err) {
      return Promise.reject(cannotStart(this.upstream, err));
    }
    return new Promise<MessageChannel>((resolve, reject) => {
      const onAbort = (): void => {
        child.kill('SIGKILL');
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      child.once('error', (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(cannotStart(this.upstream, err));
      });
      child.once('spawn', () => {
        signal?.removeEventListener('abort', onAbort);
        if (signal?.aborted) return;
        resolve(new StdioChannel(this.upstream, child, this.cmd, this.log.child({ pid: child.pid })));
      });
    });
  }
}

function cannotStart(upstream: string, err: unknown): CausewayError {
  const code = errorCode(err);
  return new CausewayError(
    'upstream_unavailable',
    `Upstream ${upstream}: cannot start its command${code === undefined ? '' : ` (${code})`}`,
    undefined,
    { cause: err },
  );
}

class StdioChannel implements MessageChannel {
  private readonly messageHandlers: Array<(m: JsonRpcMessage) => void> = [];
  private readonly closeHandlers: Array<(reason: Error | undefined) => void> = [];
  private state: 'open' | 'closing' | 'closed' = 'open';
  private stopping: Promise<void> | undefined;
  private readonly exited: Promise<void>;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private lostReason: Error | undefined;
  private readonly stderr: StderrLog;

  constructor(
    private readonly upstream: string,
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly cmd: StdioCommand,
    private readonly log: Logger,
  ) {
    this.stderr = new StderrLog(log, cmd.stderrLinesPerSecond ?? DEFAULT_STDERR_LINES_PER_SECOND);
    child.stdout.on('data', (chunk: Buffer) => this.read(chunk));
    child.stderr.on('data', (chunk: Buffer) => this.stderr.write(chunk));
    child.stdin.on('error', (err) =>
      this.lose(
        new CausewayError('upstream_unavailable', `Upstream ${upstream}: its stdin failed`, undefined, { cause: err }),
      ),
    );
    child.on('error', (err) => log.warn({ err }, 'upstream process error'));
    this.exited = new Promise<void>((resolve) => {
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        this.stderr.flush();
        resolve();
        this.finish();
      };
      child.once('close', finish);
      child.once('exit', (code, sig) => {
        if (this.state === 'open') {
          log.warn({ code, signal: sig }, 'upstream process exited');
          this.lostReason ??= new CausewayError('upstream_unavailable', `Upstream ${upstream}: its process exited`);
        } else log.debug({ code, signal: sig }, 'upstream process stopped');
        setTimeout(finish, CLOSE_AFTER_EXIT_MS).unref();
      });
    });
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  send(message: JsonRpcMessage): Promise<void> {
    if (this.state !== 'open')
      return Promise.reject(
        this.lostReason ??
          new CausewayError('upstream_unavailable', `Upstream ${this.upstream}: its process is stopped`),
      );
    return new Promise((resolve, reject) => {
      this.child.stdin.write(`${JSON.stringify(message)}\n`, (err) => {
        if (err)
          reject(
            new CausewayError(
              'upstream_unavailable',
              `Upstream ${this.upstream}: writing to its stdin failed`,
              undefined,
              { cause: err },
            ),
          );
        else resolve();
      });
    });
  }

  onMessage(handler: (message: JsonRpcMessage) => void): void {
    this.messageHandlers.push(handler);
  }

  onClose(handler: (reason: Error | undefined) => void): void {
    this.closeHandlers.push(handler);
  }

  close(): Promise<void> {
    this.stopping ??= this.stop();
    return this.stopping;
  }

  private async stop(): Promise<void> {
    if (this.state === 'open') this.state = 'closing';
    const grace = this.cmd.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.child.stdin.end();
    if (await this.exitsWithin(grace)) return;
    this.child.kill('SIGTERM');
    if (await this.exitsWithin(grace)) return;
    this.log.warn('upstream process ignored SIGTERM; killing it');
    this.child.kill('SIGKILL');
    await this.exited;
  }

  private exitsWithin(ms: number): Promise<boolean> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited.then(() => true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Splits stdout into lines; a line longer than maxLineBytes cannot be a message we accept. */
  private read(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      const line = this.pendingBytes === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
      if (line.length > this.cmd.maxLineBytes) return this.tooLong();
      this.line(line.toString('utf8'));
      if (this.state === 'closed') return;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
      if (this.pendingBytes > this.cmd.maxLineBytes) this.tooLong();
    }
  }

  private tooLong(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.lose(badResponse(`a line on stdout is longer than ${this.cmd.maxLineBytes} bytes`));
  }

  private line(text: string): void {
    const trimmed = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (trimmed.trim() === '') return;
    let messages;
    try {
      messages = decodeMessages(trimmed);
    } catch (err) {
      this.log.warn({ err }, 'skipping a line on the upstream process stdout that is no JSON-RPC message');
      return;
    }
    for (const m of messages) {
      for (const h of this.messageHandlers) {
        try {
          h(m.message);
        } catch (err) {
          this.log.error({ err }, 'upstream message handler threw');
        }
      }
    }
  }

  /** The channel cannot go on: calls fail now, and the process is stopped. */
  private lose(reason: Error): void {
    if (this.state !== 'open') return;
    this.lostReason = reason;
    this.log.warn({ err: reason }, 'upstream process channel lost; stopping the process');
    this.finish();
    void this.close();
  }

  private finish(): void {
    if (this.state === 'closed') return;
    const reason =
      this.state === 'open'
        ? (this.lostReason ??
          new CausewayError('upstream_unavailable', `Upstream ${this.upstream}: its process exited`))
        : undefined;
    this.state = 'closed';
    for (const h of this.closeHandlers.splice(0)) {
      try {
        h(reason);
      } catch (err) {
        this.log.error({ err }, 'upstream close handler threw');
      }
    }
  }
}

/** The child's stderr, one log entry per line, at most `perSecond` lines a second; the rest counted. */
class StderrLog {
  private partial = '';
  private windowStart = 0;
  private inWindow = 0;
  private dropped = 0;

  constructor(
    private readonly log: Logger,
    private readonly perSecond: number,
  ) {}

  write(chunk: Buffer): void {
    const text = this.partial + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    if (this.partial.length > MAX_STDERR_LINE_CHARS) {
      lines.push(this.partial);
      this.partial = '';
    }
    for (const l of lines) this.line(l);
  }

  flush(): void {
    if (this.partial !== '') this.line(this.partial);
    this.partial = '';
    if (this.dropped > 0) this.log.info({ dropped: this.dropped }, 'upstream stderr lines not logged (rate limit)');
    this.dropped = 0;
  }

  private line(raw: string): void {
    const line = raw.replace(/\r$/, '');
    if (line === '') return;
    const now = Date.now();
    if (now - this.windowStart >= 1000) {
      if (this.dropped > 0) this.log.info({ dropped: this.dropped }, 'upstream stderr lines not logged (rate limit)');
      this.windowStart = now;
      this.inWindow = 0;
      this.dropped = 0;
    }
    if (this.inWindow >= this.perSecond) {
      this.dropped += 1;
      return;
    }
    this.inWindow += 1;
    this.log.info(
      { stderr: line.length > MAX_STDERR_LINE_CHARS ? `${line.slice(0, MAX_STDERR_LINE_CHARS)}…` : line },
      'upstream stderr',
    );
  }
}
