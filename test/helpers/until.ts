// The one way a test waits for background work: ask again until the answer holds. A fixed sleep
// followed by an assertion fails on a busy machine and wastes time on an idle one; this does
// neither, and when it gives up it says what it waited for and what it saw last.

export interface UntilOptions {
  /** What is being waited for, as the timeout error should name it. */
  what: string;
  /** How long to keep asking. Generous by default: only a hang should reach it. */
  timeoutMs?: number;
  /** Pause between looks. */
  everyMs?: number;
}

export const UNTIL_TIMEOUT_MS = 30_000;
const EVERY_MS = 20;

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Calls `check` until it returns a truthy value, and returns that value. A check that throws or
 * rejects counts as not yet (the machinery it asks may still be starting). Past `timeoutMs`
 * it throws an error naming `what` and the last value or error seen.
 */
export async function until<T>(check: () => T | Promise<T>, opts: UntilOptions): Promise<Truthy<T>> {
  const timeoutMs = opts.timeoutMs ?? UNTIL_TIMEOUT_MS;
  const everyMs = opts.everyMs ?? EVERY_MS;
  const end = Date.now() + timeoutMs;
  let last = 'no look yet';
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Truthy<T>;
      last = `value ${describe(value)}`;
    } catch (err) {
      last = `error ${err instanceof Error ? err.message : describe(err)}`;
    }
    if (Date.now() >= end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what}; last ${last}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Short enough for one error line. */
function describe(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
