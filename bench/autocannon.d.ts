// The part of autocannon 9 the bench uses (the package ships no types; this avoids a second devDependency).

declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    idReplacement?: boolean;
    pipelining?: number;
    timeout?: number;
    bailout?: number;
    /** ms between samples; autocannon only notices the end of `duration` at a sample. */
    sampleInt?: number;
  }

  export interface Result {
    requests: { total: number; sent: number; average: number };
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    duration: number;
  }

  export interface Instance extends EventEmitter {
    stop(): void;
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
