// One upstream's HTTP client, composed once from undici interceptors (client.ts draws the chain):
// the only way upstream/ sends HTTP to an upstream, and where undici enters it (dispatch.ts).

export { UpstreamHttp, type UpstreamHttpOptions } from './client.js';
export type { Controller, Dispatcher, Handler, Response, UpstreamRequest } from './dispatch.js';
