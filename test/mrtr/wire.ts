// Raw 2026-07-28 requests for the multi-round tests: the body and mirrored headers from the e2e
// envelope builder (test/e2e/wire.ts), sent as is, so the tests see the wire exactly (no SDK in
// between).

import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { META_CAPABILITIES, modernBody, modernHeaders, type JsonObject } from '../e2e/wire.js';
import { sseMessages } from '../helpers/sse.js';

export const ELICIT = 'test_input_required_result_elicitation';
export const ALL_CAPS = { elicitation: { form: {} }, sampling: {}, roots: {} };

/* eslint-disable @typescript-eslint/no-explicit-any */
export type Json = any;

export interface Reply {
  status: number;
  contentType: string;
  body: Json;
}

export interface CallOptions {
  caps?: Record<string, unknown>;
  id?: string | number;
  headers?: Record<string, string>;
  agent?: http.Agent;
  signal?: AbortSignal;
}

let nextId = 1;

/** The answer to user_name that the elicitation fixture turns into "Hello, <name>!". */
export const nameAnswer = (name: string): Json => ({ action: 'accept', content: { name } });

/** A modern request (all client capabilities unless `opts.caps`), its Mcp-Name from params.name or params.uri. */
export function envelope(
  method: string,
  params: Record<string, unknown>,
  opts: CallOptions = {},
): { body: string; headers: Record<string, string> } {
  const { _meta, ...rest } = params as { _meta?: JsonObject };
  const caps = (opts.caps ?? ALL_CAPS) as JsonObject;
  const body = JSON.stringify(
    modernBody(method, rest as JsonObject, opts.id ?? nextId++, { ..._meta, [META_CAPABILITIES]: caps }),
  );
  const headers: Record<string, string> = { ...modernHeaders(method), ...opts.headers };
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
  if (name !== undefined) headers['mcp-name'] = name;
  return { body, headers };
}

function decode(contentType: string, text: string): Json {
  if (contentType.startsWith('text/event-stream')) {
    // The last data event carries the response.
    return sseMessages(text).at(-1) ?? null;
  }
  return text === '' ? undefined : JSON.parse(text);
}

/** One request with fetch (keep-alive through the global dispatcher). */
export async function rpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: CallOptions = {},
): Promise<Reply> {
  const { body, headers } = envelope(method, params, opts);
  const res = await fetch(url, { method: 'POST', headers, body, signal: opts.signal });
  const contentType = res.headers.get('content-type') ?? '';
  return { status: res.status, contentType, body: decode(contentType, await res.text()) };
}

/** One request with node:http and a given keep-alive agent (for the load test's connection accounting). */
export function rpcHttp(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: CallOptions = {},
): Promise<Reply> {
  const { body, headers } = envelope(method, params, opts);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: opts.agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const contentType = String(res.headers['content-type'] ?? '');
          try {
            resolve({
              status: res.statusCode ?? 0,
              contentType,
              body: decode(contentType, Buffer.concat(chunks).toString('utf8')),
            });
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** tools/call with the given arguments and multi-round fields. */
export function callTool(
  url: string,
  name: string,
  extra: Record<string, unknown> = {},
  opts: CallOptions = {},
): Promise<Reply> {
  return rpc(url, 'tools/call', { name, arguments: {}, ...extra }, opts);
}

export function textOf(reply: Reply): string | undefined {
  const content = reply.body?.result?.content;
  return Array.isArray(content) && content[0]?.type === 'text' ? content[0].text : undefined;
}

/** Flips one character of a base64url string in the middle (never the padding-bit tail). */
export function flipChar(state: string, at = Math.floor(state.length / 2)): string {
  const c = state[at]!;
  const other = c === 'A' ? 'B' : 'A';
  return state.slice(0, at) + other + state.slice(at + 1);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A fresh mrtr.stateKeys entry (32 random bytes, base64). */
export function stateKey(): string {
  return randomBytes(32).toString('base64');
}
