// A full garbage collection in a bench process, asked over its inspector (`--inspect` on a
// loopback port): RSS read right after it is what the process keeps, not the garbage of the
// burst that came before, which V8 gives back only after tens of seconds of quiet, if at all.

import { WebSocket } from 'undici';

/**
 * Runs HeapProfiler.collectGarbage twice in the process whose inspector listens on `port`, then lets freed pages go.
 */
export async function collectGarbage(port: number): Promise<void> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`inspector on port ${port} refused the connection`));
    });
    for (const id of [1, 2]) {
      await new Promise<void>((resolve) => {
        ws.onmessage = (m) => {
          if ((JSON.parse(String(m.data)) as { id?: number }).id === id) resolve();
        };
        ws.send(JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }));
      });
    }
  } finally {
    ws.close();
  }
  // V8 unmaps the pages a collection freed on a background thread.
  await new Promise((r) => setTimeout(r, 1500));
}
