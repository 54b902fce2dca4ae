import t from 'tap';
import { until } from './until.js';

t.test('returns the first truthy value the check gives', async (t) => {
  let n = 0;
  t.equal(await until(() => (++n >= 3 ? n : 0), { what: 'three looks', everyMs: 1 }), 3);
  t.same(await until(async () => ({ ready: true }), { what: 'an object' }), { ready: true });
});

t.test('a check that throws counts as not yet', async (t) => {
  let n = 0;
  const value = await until(
    () => {
      if (++n < 3) throw new Error('not up');
      return 'up';
    },
    { what: 'the service', everyMs: 1 },
  );
  t.equal(value, 'up');
});

t.test('on timeout it names what it waited for and the last thing it saw', async (t) => {
  await t.rejects(
    until(() => ({ count: 1 }).count > 2 && 'never', { what: 'two more', timeoutMs: 30, everyMs: 5 }),
    {
      message: /timed out after 30 ms waiting for two more; last value false/,
    },
  );
  await t.rejects(
    until(
      () => {
        throw new Error('connection refused');
      },
      { what: 'the socket', timeoutMs: 30, everyMs: 5 },
    ),
    { message: /waiting for the socket; last error connection refused/ },
  );
});
