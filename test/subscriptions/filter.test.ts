// The listen vocabulary [SUBS]: request checks, what an upstream can honour, which notifications
// reach a stream and in what shape. Expected shapes are written from spec §7, not recorded.

import t from 'tap';
import { SessionFacts } from '../../src/pool/session-facts.js';
import {
  acknowledgment,
  admits,
  closingResult,
  covers,
  forStream,
  gapNotifications,
  honour,
  isChange,
  isEmpty,
  readFilter,
} from '../../src/subscriptions/filter.js';

const SID = 'io.modelcontextprotocol/subscriptionId';

t.test('readFilter: notifications object required, fields typed, URIs folded and bounded', async (t) => {
  t.match(readFilter({}, 10), { ok: false, message: /notifications object/ });
  t.match(readFilter({ notifications: [] }, 10), { ok: false });
  t.match(readFilter({ notifications: { toolsListChanged: 'yes' } }, 10), { ok: false, message: /toolsListChanged/ });
  t.match(readFilter({ notifications: { resourceSubscriptions: 'a' } }, 10), {
    ok: false,
    message: /resourceSubscriptions/,
  });
  t.match(readFilter({ notifications: { resourceSubscriptions: [1] } }, 10), { ok: false });
  t.match(readFilter({ notifications: { resourceSubscriptions: ['a', 'b', 'c'] } }, 2), {
    ok: false,
    message: /more than 2/,
  });
  t.same(readFilter({ notifications: {} }, 10), { ok: true, filter: {}, taskIds: false });
  t.same(
    readFilter(
      {
        notifications: {
          toolsListChanged: true,
          promptsListChanged: false,
          resourceSubscriptions: ['a', 'a', 'b'],
          other: 1,
        },
      },
      2,
    ),
    { ok: true, filter: { toolsListChanged: true, resourceSubscriptions: ['a', 'b'] }, taskIds: false },
    'false is the same as absent; duplicates folded; unknown fields ignored',
  );
  t.same(
    readFilter({ notifications: { taskIds: ['t1', 't1'] } }, 10),
    { ok: true, filter: { taskIds: ['t1'] }, taskIds: true },
    'task ids kept, folded',
  );
  t.match(
    readFilter({ notifications: { taskIds: ['t1', 7] } }, 10),
    { ok: false, message: /taskIds/ },
    'a task id is a string',
  );
  t.match(
    readFilter({ notifications: { taskIds: ['a', 'b', 'c'] } }, 2),
    { ok: false, message: /more than 2/ },
    'bounded like the URIs',
  );
});

t.test('honour: only what the upstream declared', async (t) => {
  const everything = {
    toolsListChanged: true,
    promptsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: ['u'],
  } as const;
  const req = { ...everything, resourceSubscriptions: ['u'] };
  t.same(honour(req, {}), {}, 'nothing declared, nothing honoured');
  t.same(honour(req, { tools: {}, prompts: {}, resources: {} }), {}, 'capabilities without listChanged / subscribe');
  t.same(honour(req, { tools: { listChanged: true }, resources: { subscribe: true } }), {
    toolsListChanged: true,
    resourceSubscriptions: ['u'],
  });
  t.same(
    honour(req, {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
    }),
    req,
  );
  t.same(
    honour({ toolsListChanged: true }, { tools: { listChanged: true }, resources: { subscribe: true } }),
    { toolsListChanged: true },
    'not asked, not given',
  );
  t.ok(isEmpty({}));
  t.ok(isEmpty({ resourceSubscriptions: [] }));
  t.notOk(isEmpty({ promptsListChanged: true }));
});

t.test('admits: kinds by opt-in, resources/updated by URI or sub-resource', async (t) => {
  const f = { toolsListChanged: true as const, resourceSubscriptions: ['file:///p/config.json', 'test://dir'] };
  const n = (method: string, params?: Record<string, string>) => ({
    jsonrpc: '2.0' as const,
    method,
    ...(params ? { params } : {}),
  });
  t.ok(admits(f, n('notifications/tools/list_changed')));
  t.notOk(admits(f, n('notifications/prompts/list_changed')));
  t.notOk(admits(f, n('notifications/resources/list_changed')));
  t.ok(admits(f, n('notifications/resources/updated', { uri: 'file:///p/config.json' })));
  t.ok(admits(f, n('notifications/resources/updated', { uri: 'test://dir/a' })), 'sub-resource');
  t.notOk(
    admits(f, n('notifications/resources/updated', { uri: 'test://directory' })),
    'a prefix is not a sub-resource',
  );
  t.notOk(admits(f, n('notifications/resources/updated', { uri: 'test://other' })));
  t.notOk(admits(f, n('notifications/resources/updated')));
  t.notOk(admits(f, n('notifications/message')));
  t.ok(covers('test://a/', 'test://a/b'));
  t.ok(covers('test://a', 'test://a#frag'));
});

t.test('change vocabulary and what makes session facts stale', async (t) => {
  for (const m of [
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'notifications/resources/list_changed',
    'notifications/resources/updated',
  ]) {
    t.ok(isChange(m), m);
  }
  for (const m of [
    'notifications/message',
    'notifications/progress',
    'notifications/tasks/status',
    'notifications/elicitation/complete',
  ]) {
    t.notOk(isChange(m), m);
  }
  t.ok(SessionFacts.staledBy('notifications/tools/list_changed'));
  t.notOk(SessionFacts.staledBy('notifications/prompts/list_changed'));
  t.notOk(SessionFacts.staledBy('toString'), 'no prototype keys');
});

t.test('wire shapes: ack, tagged notifications, closing result (id type kept)', async (t) => {
  t.same(acknowledgment({ toolsListChanged: true, resourceSubscriptions: ['u'] }, 1), {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { _meta: { [SID]: 1 }, notifications: { toolsListChanged: true, resourceSubscriptions: ['u'] } },
  });
  t.same(
    forStream({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { x: 1 } } }, 'abc'),
    {
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { [SID]: 'abc' } },
    },
  );
  t.same(
    forStream({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'u', title: 'T' } }, 2),
    {
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'u', _meta: { [SID]: 2 } },
    },
  );
  t.same(closingResult(7), { jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { [SID]: 7 } } });
  t.same(
    gapNotifications(['u']).map((n) => n.method),
    [
      'notifications/tools/list_changed',
      'notifications/prompts/list_changed',
      'notifications/resources/list_changed',
      'notifications/resources/updated',
    ],
  );
});
