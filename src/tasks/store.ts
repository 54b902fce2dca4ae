// Where the tasks Causeway bridges are recorded, so that tasks/get, tasks/update and tasks/cancel
// work on any replica. A task is a small hash of string fields (see TaskRecord in bridge.ts):
// written once at creation, then fields set and removed one at a time, so that the replica
// watching the upstream task and the replicas answering clients never overwrite each other.
// With Redis, P task:{ID} is a hash with PEXPIRE the task's life.

import type { RedisClient } from '../bus/index.js';
import { BoundedMap } from '../bounded.js';

export interface TaskStore {
  /** Records a new task; it is forgotten after `ttlMs`. */
  createTask(id: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void>;
  /** The task's fields, or undefined when it is unknown or expired. */
  readTask(id: string): Promise<Record<string, string> | undefined>;
  /** Sets fields of a task that still exists; false when it is gone. */
  setTaskFields(id: string, fields: Readonly<Record<string, string>>): Promise<boolean>;
  /** Removes fields; how many this call removed (an ask is answered by the one call that removed it). */
  dropTaskFields(id: string, names: readonly string[]): Promise<number>;
  /** Sets `name` of a task that still exists and has none yet; true when this call set it (how a task ends once). */
  setTaskFieldOnce(id: string, name: string, value: string): Promise<boolean>;
}

/** Most tasks one replica keeps in memory; the oldest goes first. */
const MAX_MEMORY_TASKS = 10_000;

export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new BoundedMap<string, { fields: Map<string, string>; until: number }>(MAX_MEMORY_TASKS);

  async createTask(id: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    this.tasks.delete(id);
    this.tasks.set(id, { fields: new Map(Object.entries(fields)), until: Date.now() + ttlMs });
  }

  async readTask(id: string): Promise<Record<string, string> | undefined> {
    const t = this.live(id);
    return t ? Object.fromEntries(t) : undefined;
  }

  async setTaskFields(id: string, fields: Readonly<Record<string, string>>): Promise<boolean> {
    const t = this.live(id);
    if (!t) return false;
    for (const [k, v] of Object.entries(fields)) t.set(k, v);
    return true;
  }

  async dropTaskFields(id: string, names: readonly string[]): Promise<number> {
    const t = this.live(id);
    if (!t) return 0;
    return names.filter((n) => t.delete(n)).length;
  }

  async setTaskFieldOnce(id: string, name: string, value: string): Promise<boolean> {
    const t = this.live(id);
    if (!t || t.has(name)) return false;
    t.set(name, value);
    return true;
  }

  private live(id: string): Map<string, string> | undefined {
    const t = this.tasks.get(id);
    if (t === undefined) return undefined;
    if (t.until > Date.now()) return t.fields;
    this.tasks.delete(id);
    return undefined;
  }
}

interface TaskScripts {
  cwTaskSet(key: string, ...fields: string[]): Promise<number>;
  cwTaskSetOnce(key: string, name: string, value: string): Promise<number>;
}

// HSET only while the hash exists: a plain HSET on an expired task would bring it back without a TTL.
const TASK_SET = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`;
const TASK_SET_ONCE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])`;

export class RedisTaskStore implements TaskStore {
  private readonly scripts: TaskScripts;

  constructor(
    private readonly client: RedisClient,
    private readonly keyPrefix: string,
  ) {
    client.defineCommand('cwTaskSet', { numberOfKeys: 1, lua: TASK_SET });
    client.defineCommand('cwTaskSetOnce', { numberOfKeys: 1, lua: TASK_SET_ONCE });
    this.scripts = client as unknown as TaskScripts;
  }

  async createTask(id: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    const key = this.key(id);
    await this.client
      .multi()
      .hset(key, fields)
      .pexpire(key, Math.max(1, Math.round(ttlMs)))
      .exec();
  }

  async readTask(id: string): Promise<Record<string, string> | undefined> {
    const h = await this.client.hgetall(this.key(id));
    return Object.keys(h).length > 0 ? h : undefined;
  }

  async setTaskFields(id: string, fields: Readonly<Record<string, string>>): Promise<boolean> {
    return (await this.scripts.cwTaskSet(this.key(id), ...Object.entries(fields).flat())) === 1;
  }

  async dropTaskFields(id: string, names: readonly string[]): Promise<number> {
    return names.length === 0 ? 0 : this.client.hdel(this.key(id), ...names);
  }

  async setTaskFieldOnce(id: string, name: string, value: string): Promise<boolean> {
    return (await this.scripts.cwTaskSetOnce(this.key(id), name, value)) === 1;
  }

  /** Task ids are Causeway's own UUIDs: nothing to escape in the Cluster hash tag. */
  private key(id: string): string {
    return `${this.keyPrefix}task:{${id}}`;
  }
}
