// Spans named and attributed after the OpenTelemetry MCP semantic conventions, through
// @opentelemetry/api alone. With no SDK registered (tracing off) every call here is the API's
// no-op: no parent is extracted, nothing is injected, and attributes are built only for a span
// that records. Session ids, tokens and headers never go on a span.

import {
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { CausewayError } from '../errors.js';
import { VERSION } from '../version.js';

const tracer = trace.getTracer('causeway', VERSION);

/** Set once a tracer provider is registered (sdk.ts): until then no request has a span or passes a trace on. */
let tracing = false;

export function tracingOn(): boolean {
  return tracing;
}

export function markTracingOn(): void {
  tracing = true;
}

/** Names and URIs are the client's: bounded here as in the access log. */
const MAX_NAME = 256;

/** What a span says about one MCP request, whichever side of Causeway it is on. */
export interface McpCall {
  method: string;
  /** The tool or prompt name, or the resource URI, the request names. */
  name?: string;
  id: string | number;
  protocolVersion: string;
}

/** `{mcp.method.name} {target}`: the target is a tool or prompt name, never a URI (unbounded). */
function spanName(method: string, name: string | undefined): string {
  return name !== undefined && (method === 'tools/call' || method === 'prompts/get')
    ? `${method} ${name.slice(0, MAX_NAME)}`
    : method;
}

function mcpAttributes(call: McpCall): Attributes {
  const a: Attributes = {
    'mcp.method.name': call.method,
    'mcp.protocol.version': call.protocolVersion,
    'jsonrpc.request.id': String(call.id),
  };
  const name = call.name?.slice(0, MAX_NAME);
  if (name === undefined) return a;
  if (call.method === 'tools/call') {
    a['gen_ai.tool.name'] = name;
    a['gen_ai.operation.name'] = 'execute_tool';
  } else if (call.method === 'prompts/get') a['gen_ai.prompt.name'] = name;
  else if (call.method === 'resources/read') a['mcp.resource.uri'] = name;
  return a;
}

type Carrier = Readonly<Record<string, unknown>>;

const carrierGetter = {
  keys: (c: Carrier) => Object.keys(c),
  get: (c: Carrier, key: string) => (typeof c[key] === 'string' ? (c[key] as string) : undefined),
};

/** A modern request as the envelope read it (ModernRequest fits). */
export interface ServedRequest {
  method: string;
  name?: string;
  id: string | number;
  params: Readonly<Record<string, unknown>>;
  meta: { protocolVersion: string };
}

/**
 * Runs a modern request in its server span. The parent is the HTTP `traceparent`, else the one
 * in `params._meta` (the convention's place for it); `serve` gets the span only when it records.
 */
export function inRequestSpan<T>(
  request: ServedRequest,
  headers: Carrier,
  serve: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const meta = request.params._meta;
  const carrier =
    headers.traceparent === undefined && typeof meta === 'object' && meta !== null ? (meta as Carrier) : headers;
  const parent = propagation.extract(ROOT_CONTEXT, carrier, carrierGetter);
  const span = tracer.startSpan(request.method, SERVER, parent);
  if (carriesNothing(span)) return serve(undefined);
  const ctx = trace.setSpan(parent, span);
  // Sampled out: nothing is recorded, but the upstream hops still carry the trace on.
  if (!span.isRecording()) return context.with(ctx, () => serve(undefined));
  span.updateName(spanName(request.method, request.name));
  span.setAttributes({
    ...mcpAttributes({
      method: request.method,
      name: request.name,
      id: request.id,
      protocolVersion: request.meta.protocolVersion,
    }),
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
  });
  return recording(span, ctx, () => serve(span));
}

/** The request failed: `reason` is Causeway's (or 'cancelled'), `code` the JSON-RPC error code the client got. */
export function markFailed(span: Span | undefined, reason: string, code?: number): void {
  if (!span) return;
  span.setAttribute('error.type', code === undefined ? reason : String(code));
  if (code !== undefined) span.setAttribute('rpc.response.status_code', String(code));
  span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
}

/**
 * One exchange with the upstream as a client span, the active one while `run` runs (so the HTTP
 * hop injects it as `traceparent`). `run` gets the trace context to put in `params._meta`, or
 * undefined when there is no span to name (tracing off). `describe` is asked only for a span that
 * records; `errorCode` reads a JSON-RPC error off the result.
 */
export function inUpstreamSpan<T>(
  method: string,
  describe: () => McpCall,
  run: (meta: Record<string, string> | undefined) => Promise<T>,
  errorCode: (result: T) => number | undefined,
): Promise<T> {
  const span = tracer.startSpan(method, CLIENT);
  if (carriesNothing(span)) return run(undefined);
  const ctx = trace.setSpan(context.active(), span);
  const meta: Record<string, string> = {};
  propagation.inject(ctx, meta);
  if (span.isRecording()) {
    const call = describe();
    span.updateName(spanName(call.method, call.name));
    span.setAttributes(mcpAttributes(call));
  }
  return recording(span, ctx, () => run(meta), errorCode);
}

/** A step of Causeway's own (a pool acquire, an upstream initialize) as a span of `kind`. */
export function inStepSpan<T>(
  name: string,
  kind: 'internal' | 'client',
  attributes: Attributes,
  run: () => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, kind === 'client' ? CLIENT : INTERNAL);
  if (!span.isRecording()) return run();
  span.setAttributes(attributes);
  return recording(span, trace.setSpan(context.active(), span), run);
}

/**
 * A command to a shared session store, as a client span under the request that needed it; the
 * store's own background work (housekeeping, republishing) makes no spans. Keys name sessions,
 * so none goes on the span.
 */
export function inStoreSpan<T>(op: string, system: string, run: () => Promise<T>): Promise<T> {
  if (trace.getSpan(context.active()) === undefined) return run();
  return inStepSpan(`causeway.store.${op}`, 'client', { 'db.system.name': system, 'causeway.store.op': op }, run);
}

/** The active span as a traceparent, to be carried to a later request; undefined when tracing is off. */
export function activeTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** Links the active span to the span a traceparent names (the round before this one). */
export function linkTo(traceparent: string, relation: string): void {
  const span = trace.getSpan(context.active());
  if (!span?.isRecording()) return;
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  if (linked && isSpanContextValid(linked))
    span.addLink({ context: linked, attributes: { 'causeway.link': relation } });
}

/** Work done for a request that reached another replica first: a span under that request's, or none. */
export function inRemoteSpan<T>(
  traceparent: string | undefined,
  name: string,
  attributes: Attributes,
  run: () => Promise<T>,
): Promise<T> {
  if (traceparent === undefined) return run();
  return context.with(propagation.extract(ROOT_CONTEXT, { traceparent }), () =>
    inStepSpan(name, 'internal', attributes, run),
  );
}

const SERVER = { kind: SpanKind.SERVER };
const CLIENT = { kind: SpanKind.CLIENT };
const INTERNAL = { kind: SpanKind.INTERNAL };

/** No trace to carry on: the API's no-op span (tracing off), or a root span sampled out. */
function carriesNothing(span: Span): boolean {
  const sc = span.spanContext();
  return sc === INVALID_SPAN_CONTEXT || !isSpanContextValid(sc);
}

/** Runs `run` with `span` active, marks it failed on a throw (or an error result), and ends it. */
async function recording<T>(
  span: Span,
  ctx: Context,
  run: () => Promise<T>,
  errorCode?: (result: T) => number | undefined,
): Promise<T> {
  try {
    const result = await context.with(ctx, run);
    const code = errorCode?.(result);
    if (code !== undefined) markFailed(span, 'upstream_error', code);
    return result;
  } catch (err) {
    markFailed(span, errorType(err));
    throw err;
  } finally {
    span.end();
  }
}

/** Puts the active trace context on outgoing HTTP headers (lower-case names, as sent). */
export function injectHeaders(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

function errorType(err: unknown): string {
  if (err instanceof CausewayError) return err.reason;
  return err instanceof Error ? err.name : '_OTHER';
}
