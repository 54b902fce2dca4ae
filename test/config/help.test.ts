// `causeway --help` opens with the settings most deployments touch and a few examples, then the
// full table: every setting still there, in the table's order. The examples are real: each one
// goes through the config loader as a user would type it.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { COMMON_SETTINGS, helpText } from '../../src/config/help.js';
import { flagName, loadConfig } from '../../src/config/load.js';
import { SETTINGS } from '../../src/config/schema.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const text = helpText('0.0.0-test');
const lines = text.split('\n');

/** The lines of one section: from its heading to the next blank-line-and-heading. */
function section(heading: string): string[] {
  const at = lines.findIndex((l) => l.startsWith(heading));
  if (at < 0) return [];
  const end = lines.findIndex((l, i) => i > at && /^[A-Z]/.test(l));
  return lines.slice(at + 1, end < 0 ? undefined : end);
}

/** The flags a section describes, in order (a setting's first line is `  --flag <kind>`). */
const flagsOf = (part: string[]): string[] => part.flatMap((l) => /^ {2}(--\S+) </.exec(l)?.[1] ?? []);

t.test('--help opens with the ten common settings, in order, then the examples and the full table', async (t) => {
  t.equal(COMMON_SETTINGS.length, 10);
  t.same(flagsOf(section('Common settings')), COMMON_SETTINGS.map(flagName), 'the common settings, in order');
  const first = COMMON_SETTINGS.slice(0, 3);
  t.same(first, ['upstream.url', 'listen.host', 'listen.port'], 'the upstream and the listener first');
  const common = lines.findIndex((l) => l.startsWith('Common settings'));
  const examples = lines.findIndex((l) => l.startsWith('Examples:'));
  const all = lines.findIndex((l) => l.startsWith('All settings:'));
  t.ok(common > 0 && common < examples && examples < all, 'common settings, then examples, then all settings');
  t.ok(
    lines.slice(0, common).every((l) => !/^ {2}--/.test(l)),
    'no setting before the common ones',
  );
});

t.test('the full table still lists every setting, in the schema order', async (t) => {
  t.same(
    flagsOf(section('All settings:')),
    SETTINGS.map((s) => flagName(s.path)),
  );
  for (const path of COMMON_SETTINGS)
    t.ok(
      SETTINGS.some((s) => s.path === path),
      `${path} is a setting`,
    );
});

/** The example commands, backslash-continued lines joined, environment assignments apart. */
function exampleCommands(): { env: Record<string, string>; command: string; argv: string[] }[] {
  const joined = section('Examples:')
    .map((l) => l.trim())
    .join('\n')
    .replace(/\\\n/g, ' ');
  const key = randomBytes(32).toString('base64');
  return joined
    .split('\n')
    .filter((l) => /(^|\s)causeway\s/.test(l))
    .map((l) => {
      const words = l
        .replace(/"\$\(openssl rand -base64 32\)"|"\$KEY"/g, key)
        .split(/\s+/)
        .filter(Boolean);
      const env: Record<string, string> = {};
      while (/^[A-Z_]+=/.test(words[0]!)) {
        const [name, value] = words.shift()!.split(/=(.*)/s);
        env[name!] = value!;
      }
      const command = words.shift()!;
      return { env, command, argv: words.map((w) => (w.startsWith('config/') ? ROOT + w : w)) };
    });
}

t.test('every example is accepted by the config loader as written', async (t) => {
  const commands = exampleCommands();
  t.equal(commands.length, 4, 'one upstream, two Redis replicas, a config file');
  for (const { env, command, argv } of commands) {
    t.equal(command, 'causeway');
    t.doesNotThrow(() => loadConfig(argv, env), argv.join(' '));
  }
  const [, a, b] = commands.map(({ env, argv }) => loadConfig(argv, env));
  t.same(a!.mrtr.stateKeys, b!.mrtr.stateKeys, 'the Redis pair shares its requestState keys');
  t.equal(a!.store.kind, 'redis');
  t.not(a!.listen.port, b!.listen.port, 'the pair listens apart');
  t.not(a!.admin.port, b!.admin.port, 'and keeps its admin ports apart');
});
