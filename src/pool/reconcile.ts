// After a store outage: every session this replica opened or kept meanwhile is stored,
// insert-if-absent. Where another replica's session got there first, this replica adopts it and
// retires its own; a session that replaced one which died during the outage replaces that record
// (compare-and-set). Either way the replicas converge on one session per key.

import type { Logger } from '../log.js';
import type { SessionKey } from './session-key.js';
import type { PooledSession } from './session-facts.js';
import { sameRecord, type SessionRecord, type SessionStore } from './store/index.js';
import type { StoreHealth } from './store-health.js';

export interface ReconcileHost {
  readonly local: ReadonlyMap<string, PooledSession>;
  readonly store: SessionStore;
  readonly health: StoreHealth;
  readonly log: Logger;
  /** The record each session opened during the outage replaced, while the store may still hold it. */
  readonly replacing: WeakMap<PooledSession, SessionRecord>;
  isClosed(): boolean;
  adopt(key: SessionKey, record: SessionRecord): PooledSession;
  /** Ends a superseded session later, so calls already running on it can finish. */
  retire(record: SessionRecord): void;
}

const BATCH = 64;

export async function republish(host: ReconcileHost): Promise<void> {
  const { local, store, health } = host;
  const sessions = [...local.values()];
  let published = 0;
  let superseded = 0;
  for (let i = 0; i < sessions.length; i += BATCH) {
    if (host.isClosed() || !health.isUp) return;
    const results = await Promise.allSettled(
      sessions.slice(i, i + BATCH).map(async (s) => {
        if (local.get(s.key.id) !== s) return;
        const mine: SessionRecord = { ...s.record, lastUsedAt: Math.max(s.record.lastUsedAt, s.lastUsedAt) };
        let stored = await health.run('insert', () => store.insert(mine));
        const replaced = host.replacing.get(s);
        if (replaced && sameRecord(stored, replaced)) {
          stored = await health.run('replace', () =>
            store.replace(replaced.generation, { ...mine, generation: replaced.generation + 1 }),
          );
          if (stored.sessionId === mine.sessionId && stored.createdAt === mine.createdAt) s.record = stored;
        }
        if (local.get(s.key.id) !== s) return;
        if (sameRecord(stored, s.record)) {
          if (s.localOnly) published += 1;
          s.localOnly = false;
          host.replacing.delete(s);
          return;
        }
        superseded += 1;
        host.adopt(s.key, stored);
        host.retire(s.record);
      }),
    );
    if (results.some((r) => r.status === 'rejected')) return;
  }
  if (published + superseded > 0)
    host.log.info({ published, superseded }, 'replica-local sessions reconciled with the session store');
}
