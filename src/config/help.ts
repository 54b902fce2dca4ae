// `causeway --help`: the settings most deployments touch and a few examples first, then every
// setting from the one SETTINGS table, with its flag, env name and default.

import { envName, flagName } from './load.js';
import type { NamedSetting } from './setting.js';
import { SETTINGS } from './schema.js';

/** The settings a first deployment sets, in the order --help shows them. */
export const COMMON_SETTINGS: readonly string[] = [
  'upstream.url',
  'listen.host',
  'listen.port',
  'admin.port',
  'store.kind',
  'store.redisUrl',
  'mrtr.stateKeys',
  'principal.mode',
  'principal.hashSecret',
  'auth.mode',
];

const EXAMPLES = [
  'Examples:',
  '  One upstream (Causeway on 127.0.0.1:8080/mcp):',
  '    causeway --upstream.url http://127.0.0.1:3000/mcp',
  '',
  '  Two replicas sharing Redis (the same mrtr.stateKeys on both; ports apart on one host):',
  '    KEY=$(openssl rand -base64 32)',
  '    causeway --upstream.url http://127.0.0.1:3000/mcp --store.kind redis \\',
  '      --store.redisUrl redis://127.0.0.1:6379 --mrtr.stateKeys "$KEY"',
  '    causeway --upstream.url http://127.0.0.1:3000/mcp --store.kind redis \\',
  '      --store.redisUrl redis://127.0.0.1:6379 --mrtr.stateKeys "$KEY" \\',
  '      --listen.port 8081 --admin.port 9465',
  '',
  '  A config file, its secrets from the environment:',
  '    CAUSEWAY_PRINCIPAL_HASH_SECRET="$(openssl rand -base64 32)" \\',
  '    CAUSEWAY_MRTR_STATE_KEYS="$(openssl rand -base64 32)" \\',
  '      causeway --config config/causeway.example.json',
];

function describe(s: NamedSetting): string[] {
  const choices = s.choices ? ` (${s.choices.join(' | ')})` : '';
  return [
    `  ${flagName(s.path)} <${s.kind}>${choices}`,
    `      env ${envName(s.path)}, default ${JSON.stringify(s.default)}`,
    `      ${s.doc}`,
  ];
}

export function helpText(version: string): string {
  const byPath = new Map(SETTINGS.map((s) => [s.path, s]));
  const lines = [
    `causeway ${version}: a stateless MCP 2026-07-28 face for legacy MCP servers`,
    '',
    'Usage: causeway [--config FILE] [--<setting> VALUE | --<setting>=VALUE]...',
    '       causeway --help | --version',
    '       causeway doctor URL [--json] [--<setting> VALUE]...',
    '         checks one server before traffic goes to it: transport, era, auth, sessions, lists, tools;',
    '         exit 0 ready, 1 a blocking problem, 2 unreachable (causeway doctor --help says more)',
    '',
    'Common settings (most deployments set only these; all settings below):',
    ...COMMON_SETTINGS.flatMap((path) => describe(byPath.get(path)!)),
    '',
    ...EXAMPLES,
    '',
    'Each setting comes from, last one winning: its default, the JSON file named by --config',
    '(or CAUSEWAY_CONFIG, nested by the dots of the key), its environment variable, its flag.',
    'Lists are comma-separated in env and flags; maps are key=value,key=value; json is JSON.',
    '',
    'All settings:',
    ...SETTINGS.flatMap(describe),
  ];
  return lines.join('\n') + '\n';
}
