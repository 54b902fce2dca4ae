// `causeway --help`: every setting from the one SETTINGS table, with its flag, env name and default.

import { envName, flagName } from './load.js';
import { SETTINGS } from './schema.js';

export function helpText(version: string): string {
  const lines = [
    `causeway ${version}: a stateless MCP 2026-07-28 face for legacy MCP servers`,
    '',
    'Usage: causeway [--config FILE] [--<setting> VALUE | --<setting>=VALUE]...',
    '       causeway --help | --version',
    '',
    'Each setting comes from, last one winning: its default, the JSON file named by --config',
    '(or CAUSEWAY_CONFIG, nested by the dots of the key), its environment variable, its flag.',
    'Lists are comma-separated in env and flags; maps are key=value,key=value; json is JSON.',
    '',
    'Settings:',
  ];
  for (const s of SETTINGS) {
    const choices = s.choices ? ` (${s.choices.join(' | ')})` : '';
    lines.push(`  ${flagName(s.path)} <${s.kind}>${choices}`);
    lines.push(`      env ${envName(s.path)}, default ${JSON.stringify(s.default)}`);
    lines.push(`      ${s.doc}`);
  }
  return lines.join('\n') + '\n';
}
