// `causeway doctor [URL] [--json] [--<setting> VALUE]...`: the URL becomes upstream.url and every
// other flag goes through Causeway's own config loader, so `--upstream.transport`,
// `--upstream.headers`, `--upstream.credentials`, `--config` and the env variables mean here what
// they mean for `causeway` itself. The upstream checked is the one those settings describe.

import { loadConfig, resolveTopology, type UpstreamSpec } from '../config/index.js';

export const DOCTOR_USAGE = [
  'Usage: causeway doctor [URL] [--json] [--upstream.<setting> VALUE]...',
  '',
  'Checks one MCP server before traffic goes to it: transport and protocol era, auth,',
  'initialize or server/discover, sessions, GET stream, list counts, Mcp-Param-* annotations,',
  'taskSupport, and what each client era gets through Causeway. It calls no tool, and ends the',
  'session (DELETE) and any child process it started.',
  '',
  '  URL                      the server (upstream.url); leave it out for --upstream.transport stdio',
  '  --json                   print the report as JSON',
  '  --upstream.transport T   auto (default here), streamable-http, sse or stdio',
  '  --upstream.headers H     e.g. authorization=Bearer TOKEN',
  '',
  'Exit status: 0 ready, 1 a blocking problem, 2 the server cannot be reached or bad flags.',
  '',
].join('\n');

export interface DoctorOptions {
  json: boolean;
  spec: UpstreamSpec;
  /** Whether a log level was asked for: otherwise the doctor's clients log nothing. */
  logLevel: string;
}

/** Thrown for a command line the doctor cannot run with (exit 2, as `causeway` does). */
export class DoctorUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DoctorUsageError';
  }
}

/** Reads the command line ('help' for --help); the config loader's ConfigError goes through as it is. */
export function doctorOptions(argv: readonly string[], env: NodeJS.ProcessEnv): DoctorOptions | 'help' {
  const rest: string[] = [];
  let url: string | undefined;
  let json = false;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') json = true;
    else if (arg === '--help' || arg === '-h') help = true;
    else if (arg.startsWith('--')) {
      rest.push(arg);
      // A flag's value goes with it, so that it is never taken for the URL.
      if (!arg.includes('=') && i + 1 < argv.length) rest.push(argv[++i]!);
    } else if (url === undefined) url = arg;
    else rest.push(arg);
  }
  if (help) return 'help';
  const given = url === undefined ? [] : ['--upstream.url', url];
  const config = loadConfig([...transportDefault(rest, env), ...rest, ...given], env);
  const { topology } = resolveTopology(config);
  const spec = pick(topology.upstreams, url);
  const asked = rest.some((a) => a.startsWith('--log.level')) || env.CAUSEWAY_LOG_LEVEL !== undefined;
  return { json, spec, logLevel: asked ? config.log.level : 'silent' };
}

/**
 * auto unless told: the doctor's first job is to find out what the server speaks. Told is a
 * flag, the env variable, or a config file, whose upstream is then checked as it is configured
 * (a flag would override the file).
 */
function transportDefault(rest: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const told = (name: string) => rest.some((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  const file = told('config') || env.CAUSEWAY_CONFIG !== undefined;
  return told('upstream.transport') || file || env.CAUSEWAY_UPSTREAM_TRANSPORT !== undefined
    ? []
    : ['--upstream.transport', 'auto'];
}

/** The upstream the settings describe: the only one, or with `upstreams`, the one at the URL given. */
function pick(upstreams: readonly UpstreamSpec[], url: string | undefined): UpstreamSpec {
  if (upstreams.length === 1) return upstreams[0]!;
  const at = upstreams.find((u) => url !== undefined && u.urls.includes(url));
  if (at) return at;
  throw new DoctorUsageError(`the settings describe ${upstreams.length} upstreams: give the URL of the one to check`);
}
