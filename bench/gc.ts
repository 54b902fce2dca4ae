// What a process allocated over a timed window, from the lines V8 writes per collection when it
// runs with --trace-gc-nvp (`gc=s` for a scavenge, `allocated=<bytes since the previous one>`,
// `promoted=<bytes a scavenge moved to the old generation>`).
// The window is the part of its log written between two marks; allocation before the window's
// first collection is counted in it, which over the tens of collections of a run is noise.

import { open, stat } from 'node:fs/promises';

export interface GcWindow {
  /** Bytes allocated, summed over the collections in the window. */
  allocated: number;
  scavenges: number;
  collections: number;
  /** Bytes the scavenges promoted: what lived through two of them, or was kept by old garbage. */
  promoted: number;
}

/** The log's size now: the start of a window. */
export async function gcMark(file: string): Promise<number> {
  return (await stat(file)).size;
}

/** What the collections logged since `from` say. */
export async function gcSince(file: string, from: number): Promise<GcWindow> {
  const end = (await stat(file)).size;
  const out: GcWindow = { allocated: 0, scavenges: 0, collections: 0, promoted: 0 };
  if (end <= from) return out;
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(end - from);
    await fh.read(buf, 0, buf.length, from);
    for (const line of buf.toString('utf8').split('\n')) {
      const kind = / gc=(\w+)/.exec(line);
      const allocated = / allocated=(\d+)/.exec(line);
      if (!kind || !allocated) continue;
      out.collections += 1;
      if (kind[1] === 's') out.scavenges += 1;
      out.allocated += Number(allocated[1]);
      const promoted = / promoted=(\d+)/.exec(line);
      if (promoted) out.promoted += Number(promoted[1]);
    }
  } finally {
    await fh.close();
  }
  return out;
}
