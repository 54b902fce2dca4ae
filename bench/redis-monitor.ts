// Counts the Redis commands clients send, as MONITOR sees them: one MONITOR connection per node
// (every primary of a Cluster). A script call is one command sent; the commands a script runs
// inside it (MONITOR source "lua") are left out, as are the bench's own (INFO commandstats, the
// fences, MONITOR). INFO commandstats counts both, which is what the bench reports as "executed".
//
// Steps are cut by fences: an ECHO with a numbered token sent to every node on a connection of
// its own. A node runs one command at a time and MONITOR lists them in that order, so every
// command a node lists between fence a and fence b ran between them, whenever its line reaches
// the bench.

import { Redis } from 'ioredis';
import type { SentDelta } from './types.js';

const FENCE = 'causeway-bench-fence-';

/** One node's counts between two fences. */
interface Segment {
  total: number;
  beats: number;
  lastUse: number;
  sweep: number;
  byName: Map<string, number>;
  byKey: Map<string, number>;
}

const segment = (): Segment => ({ total: 0, beats: 0, lastUse: 0, sweep: 0, byName: new Map(), byKey: new Map() });

interface Node {
  control: Redis;
  monitor: Redis;
  /** segments[n]: what the node ran after fence n (0: before the first fence). */
  segments: Segment[];
  fence: number;
}

/** A key with its store prefix written `P ` and each hash tag `{...}` as `{}`: `P session:{}`. */
export function keyPattern(key: string, prefix = 'causeway:'): string {
  return (key.startsWith(prefix) ? `P ${key.slice(prefix.length)}` : key).replace(/\{[^}]*\}/g, '{}');
}

/**
 * How one command line of MONITOR is counted: its name, its name with its key pattern, and which background it belongs
 * to.
 */
export function classify(
  args: readonly string[],
): { name: string; key: string; kind: 'beat' | 'lastUse' | 'sweep' | undefined } | undefined {
  const name = (args[0] ?? '').toLowerCase();
  if (name === 'monitor') return undefined;
  if (name === 'info' && args[1]?.toLowerCase() === 'commandstats') return undefined;
  if (name === 'echo' && args[1]?.startsWith(FENCE)) return undefined;
  if (name === 'evalsha' || name === 'eval') {
    // EVALSHA sha numkeys key...: named by the script's first key.
    const first = Number(args[2]) > 0 ? (args[3] ?? '') : '';
    const script = `${name}:${keyPattern(first)}`;
    return { name: script, key: script, kind: first.endsWith('replicas') ? 'beat' : undefined };
  }
  const key = args[1] === undefined ? name : `${name} ${keyPattern(args[1])}`;
  let kind: 'lastUse' | 'sweep' | undefined;
  // The pool's last-use batch: ZADD XX GT per idle shard, PEXPIRE per record.
  if (name === 'zadd' && args[2]?.toUpperCase() === 'XX' && args[3]?.toUpperCase() === 'GT') kind = 'lastUse';
  else if (name === 'pexpire' && /session:\{/.test(args[1] ?? '')) kind = 'lastUse';
  // The idle sweep: each replica reads every idle shard.
  else if (name === 'zrangebyscore' && /idle:\{/.test(args[1] ?? '')) kind = 'sweep';
  return { name, key, kind };
}

const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

export class RedisMonitor {
  private fenceId = 0;
  private waiters: Array<() => void> = [];

  private constructor(private readonly nodes: Node[]) {}

  /** One MONITOR per `host:port`. */
  static async open(addresses: readonly string[]): Promise<RedisMonitor> {
    const nodes: Node[] = [];
    const mon = new RedisMonitor(nodes);
    try {
      for (const a of addresses) {
        const i = a.lastIndexOf(':');
        const control = new Redis({ host: a.slice(0, i), port: Number(a.slice(i + 1)), maxRetriesPerRequest: 1 });
        control.on('error', () => undefined);
        const node: Node = { control, monitor: control, segments: [segment()], fence: 0 };
        nodes.push(node);
        node.monitor = await control.monitor();
        node.monitor.on('error', () => undefined);
        node.monitor.on('monitor', (_time: string, args: string[], source: string) => mon.line(node, args, source));
      }
    } catch (err) {
      mon.close();
      throw err;
    }
    return mon;
  }

  private line(node: Node, args: string[], source: string): void {
    if (args[0]?.toLowerCase() === 'echo' && args[1]?.startsWith(FENCE)) {
      node.fence = Number(args[1].slice(FENCE.length));
      while (node.segments.length <= node.fence) node.segments.push(segment());
      for (const w of this.waiters.splice(0)) w();
      return;
    }
    if (source === 'lua') return;
    const c = classify(args);
    if (!c) return;
    const s = node.segments[node.fence]!;
    s.total++;
    if (c.kind === 'beat') s.beats++;
    else if (c.kind === 'lastUse') s.lastUse++;
    else if (c.kind === 'sweep') s.sweep++;
    bump(s.byName, c.name);
    bump(s.byKey, c.key);
  }

  /** Sends the next fence to every node; resolves with its number once every MONITOR has listed it. */
  async fence(): Promise<number> {
    const id = ++this.fenceId;
    await Promise.all(this.nodes.map((n) => n.control.echo(`${FENCE}${id}`)));
    const deadline = Date.now() + 10_000;
    while (this.nodes.some((n) => n.fence < id)) {
      if (Date.now() > deadline) throw new Error(`MONITOR did not list fence ${id} within 10 s`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return id;
  }

  /** Commands sent between fences a and b, summed over the nodes; perOp over `ops` operations. */
  between(a: number, b: number, ops: number): SentDelta {
    const d: SentDelta = { total: 0, beats: 0, lastUse: 0, sweep: 0, byName: {}, byKey: {}, perOp: NaN, ownPerOp: NaN };
    for (const node of this.nodes) {
      for (let i = a; i < b; i++) {
        const s = node.segments[i];
        if (!s) continue;
        d.total += s.total;
        d.beats += s.beats;
        d.lastUse += s.lastUse;
        d.sweep += s.sweep;
        for (const [k, n] of s.byName) d.byName[k] = (d.byName[k] ?? 0) + n;
        for (const [k, n] of s.byKey) d.byKey[k] = (d.byKey[k] ?? 0) + n;
      }
    }
    if (ops > 0) {
      d.perOp = (d.total - d.beats) / ops;
      d.ownPerOp = (d.total - d.beats - d.lastUse - d.sweep) / ops;
    }
    return d;
  }

  close(): void {
    for (const n of this.nodes) {
      n.monitor.disconnect();
      n.control.disconnect();
    }
  }
}
