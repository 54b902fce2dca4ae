// auth.rules: every matching rule applies, a request needs all their scopes at once, a pattern
// needs a name, and a list keeps only what the grant may call.

import t from 'tap';
import { Access } from '../../src/auth/index.js';
import { parseRules } from '../../src/config/scope-rules.js';

const { rules, problems } = parseRules({
  '*': ['mcp'],
  'tools/call': ['call'],
  'tools/call admin_*': ['admin'],
  'resources/read file:///secret/*': ['secret'],
});
const access = (...scopes: string[]) =>
  new Access({ issuer: 'https://as.example', subject: 's' }, new Set(scopes), rules);

t.test('the scopes a request needs: the union of every matching rule, all named when any is missing', async (t) => {
  t.same(problems, []);
  t.same(access('mcp', 'call').missing('tools/call', 'echo'), []);
  t.same(access('mcp', 'call').missing('tools/call', 'admin_reset'), ['mcp', 'call', 'admin']);
  t.same(access('admin').missing('tools/call', 'admin_reset'), ['mcp', 'call', 'admin']);
  t.same(access('mcp').missing('tools/list', undefined), []);
  t.same(access().missing('server/discover', undefined), ['mcp']);
  t.same(access('mcp').missing('resources/read', undefined), [], 'a pattern rule needs a name to match');
});

t.test('lists keep only what may be called, and become private', async (t) => {
  const tools = { tools: [{ name: 'echo' }, { name: 'admin_reset' }, { name: 7 }], cacheScope: 'public', ttlMs: 5 };
  t.same(access('mcp', 'call').filterList('tools/list', tools), {
    tools: [{ name: 'echo' }],
    cacheScope: 'private',
    ttlMs: 5,
  });
  t.same(access('mcp').filterList('tools/list', tools).tools, [], 'no tools/call scope: no tool');
  const resources = { resources: [{ uri: 'file:///secret/a' }, { uri: 'file:///pub/b' }] };
  t.same(access('mcp').filterList('resources/list', resources), { resources: [{ uri: 'file:///pub/b' }] });
  const templates = {
    resourceTemplates: [{ uriTemplate: 'file:///secret/{name}' }, { uriTemplate: 'file:///pub/{name}' }],
    cacheScope: 'public',
  };
  t.same(
    access('mcp').filterList('resources/templates/list', templates),
    { resourceTemplates: [{ uriTemplate: 'file:///pub/{name}' }], cacheScope: 'private' },
    'a template by the rules for a read of its text',
  );
  t.same(
    access('mcp', 'secret').filterList('resources/templates/list', templates).resourceTemplates,
    templates.resourceTemplates,
  );
  t.same(access('mcp').filterList('prompts/get', { messages: [] }), { messages: [] }, 'other results untouched');
});

t.test('a list can lose items only when a rule for its call asks for a scope the grant lacks', async (t) => {
  t.ok(access('mcp', 'call').mayHide('tools/list'), 'admin_* needs admin');
  t.notOk(access('mcp', 'call', 'admin').mayHide('tools/list'), 'every tools/call rule satisfied');
  t.ok(access('mcp', 'admin').mayHide('tools/list'), 'tools/call without a pattern needs call');
  t.notOk(access('mcp').mayHide('prompts/list'), 'no rule for prompts/get but *');
  t.ok(access('mcp').mayHide('resources/templates/list'), 'resources/read file:///secret/* needs secret');
  t.notOk(access('mcp').mayHide('tools/call'), 'not a list');
});
