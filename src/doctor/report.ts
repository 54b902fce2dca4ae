// What `causeway doctor` found about one server, as `--json` prints it and the text report reads
// it: each check's finding, then the problems, each blocking or not. The exit status is read off
// the problems only, so the text, the JSON and the status never disagree.

import type { JsonObject } from '../jsonrpc.js';

export type Transport = 'streamable-http' | 'sse' | 'stdio';
export type Era = 'legacy' | 'modern';

/** Why the doctor stops short of "ready": each kind is one line of the README's list. */
export type BlockingKind =
  | 'unreachable'
  | 'auth_required'
  | 'credentials_refused'
  | 'no_transport'
  | 'era_mismatch'
  | 'handshake_refused'
  | 'list_refused'
  | 'unroutable_tool';

export interface Problem {
  /** Blocking problems make the exit status 1 (2 for `unreachable`); warnings leave it 0. */
  blocking: boolean;
  kind: BlockingKind | 'warning';
  message: string;
}

export interface AuthFinding {
  /** The server answered 401 without (or despite) the configured credential. */
  required: boolean;
  /** What the doctor sent: nothing, a static Authorization header, or a configured grant. */
  credentials: 'none' | 'header' | 'client_credentials' | 'token_exchange' | 'authorization_code';
  /** The 401's WWW-Authenticate, as sent. */
  challenge?: string;
  /** Where the protected resource metadata was read (RFC 9728), and what it says. */
  metadataUrl?: string;
  resource?: string;
  authorizationServers?: string[];
  scopesSupported?: string[];
  /** Why the metadata could not be read, when it could not. */
  metadataError?: string;
}

export interface ListCount {
  count: number;
  /** Every page was read (false: a page was refused, or the page bound was reached). */
  complete: boolean;
  error?: string;
}

export interface ToolFinding {
  name: string;
  taskSupport: 'forbidden' | 'optional' | 'required';
  /** The Mcp-Param-* headers its annotations give, or why they cannot. */
  paramHeaders: string[] | { problem: string };
}

export interface Report {
  target: { url?: string; command?: string; transportSetting: string; eraSetting: string };
  transport?: { found: Transport; url?: string; how: string };
  era?: { found: Era; how: string };
  auth?: AuthFinding;
  server?: {
    name?: string;
    version?: string;
    protocolVersion?: string;
    supportedVersions?: string[];
    capabilities: JsonObject;
    instructionsLength: number;
  };
  session?: {
    /** Legacy: initialize returned an Mcp-Session-Id (or the transport is one session per connection). */
    sessionful: boolean;
    how: string;
    /** Legacy Streamable HTTP: what a GET with the session id got. */
    getStream: 'served' | 'refused' | 'not applicable' | 'failed';
    getStreamHow: string;
    /** Ended at the end of the run (DELETE, the connection closed, the child stopped). */
    ended: boolean;
  };
  listChanged?: { tools: boolean; prompts: boolean; resources: boolean };
  lists?: { tools?: ListCount; prompts?: ListCount; resources?: ListCount; resourceTemplates?: ListCount };
  tools?: ToolFinding[];
  faces?: { modernClients: string; legacyClients: string };
  problems: Problem[];
  status: 'ready' | 'blocked' | 'unreachable';
  exitCode: 0 | 1 | 2;
}

/** The status and exit code the problems give: 2 when the server cannot be reached, 1 on any other blocking one. */
export function settle(report: Omit<Report, 'status' | 'exitCode'>): Report {
  const blocking = report.problems.filter((p) => p.blocking);
  if (blocking.some((p) => p.kind === 'unreachable')) return { ...report, status: 'unreachable', exitCode: 2 };
  if (blocking.length > 0) return { ...report, status: 'blocked', exitCode: 1 };
  return { ...report, status: 'ready', exitCode: 0 };
}

export function blocking(kind: BlockingKind, message: string): Problem {
  return { blocking: true, kind, message };
}

export function warning(message: string): Problem {
  return { blocking: false, kind: 'warning', message };
}

/** An error's own words, for the report (never a stack). */
export function wordsOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // The cause says what the network said (ECONNREFUSED...), unless the message says it already.
  const cause = err.cause instanceof Error ? err.cause.message : '';
  return cause === '' || err.message.includes(cause) ? err.message : `${err.message}: ${cause}`;
}
