// The body of an answer Causeway writes itself where an upstream's HTTP answer would be (a stdio
// child's, a federated mount's own modern face): read as undici's is read.

import { Readable } from 'node:stream';

/** A body as undici's: a byte stream that can be dumped, with the request cancelled when it is destroyed early. */
export class AnswerBody extends Readable {
  constructor(private readonly onDestroy: (err: Error | null) => void) {
    super();
  }

  override _read(): void {}

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.onDestroy(err);
    callback(err);
  }

  /** Reads the rest and drops it (what undici's dump does); `limit` is left to the caller's timer. */
  dump(_opts?: { limit?: number }): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.readableEnded || this.destroyed) return resolve();
      this.once('end', () => resolve());
      this.once('close', () => resolve());
      this.on('error', () => undefined);
      this.resume();
    });
  }
}
