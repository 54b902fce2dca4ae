// Label values are bounded: 10,000 requests naming distinct bogus tools, prompts and resources
// leave the number of series unchanged (they count as `_other`), and no name leaks into a label.

import t from 'tap';
import { Agent, request } from 'undici';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { envelope } from '../mrtr/wire.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
const agent = new Agent({ connections: 50 });
t.teardown(async () => {
  await agent.close();
  await causeway.close();
  await upstream.close();
});

async function send(method: string, params: Record<string, unknown>): Promise<number> {
  const { body, headers } = envelope(method, params);
  const res = await request(causeway.url, { method: 'POST', headers, body, dispatcher: agent });
  await res.body.dump();
  return res.statusCode;
}

const scrape = async () => (await fetch(`${causeway.adminUrl}/metrics`)).text();
const series = (text: string) => text.split('\n').filter((l) => l.startsWith('causeway_'));

t.test('10,000 distinct bogus tool names add no series', async (t) => {
  // Warm up: the listed names are learned, and one bogus request of each kind makes its `_other` series.
  await send('tools/list', {});
  await send('tools/call', { name: 'bogus_warmup', arguments: {} });
  await send('prompts/get', { name: 'bogus_warmup' });
  await send('resources/read', { uri: 'test://bogus/warmup' });
  const before = series(await scrape());

  const N = 10_000;
  const BATCH = 200;
  for (let i = 0; i < N; i += BATCH) {
    await Promise.all(
      Array.from({ length: BATCH }, (_, j) => send('tools/call', { name: `bogus_${i + j}`, arguments: {} })),
    );
  }
  for (let i = 0; i < 200; i++) {
    await Promise.all([
      send('prompts/get', { name: `bogus_prompt_${i}` }),
      send('resources/read', { uri: `test://bogus/${i}` }),
    ]);
  }

  const text = await scrape();
  const after = series(text);
  t.equal(after.length, before.length, 'no new series');
  t.notMatch(text, /bogus_\d/, 'no bogus name leaks into a label');
  const other = after.find(
    (l) => l.startsWith('causeway_modern_requests_total{') && l.includes('method="tools/call",name="_other"'),
  );
  t.ok(other, 'bogus tools count as _other');
  t.equal(Number(other?.split(' ')[1]), N + 1);
});
