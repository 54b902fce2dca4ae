/**
 * Harness around the official MCP conformance suite
 * (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, a devDependency).
 *
 * `runConformance()` spawns the suite's CLI (`conformance server ...`) under the
 * current Node binary with `test/conformance/node20-fs-hook.mjs` added to
 * NODE_OPTIONS (the suite declares Node >= 22 and otherwise dies at link time on
 * Node 20), waits for it with a hard deadline, then parses every `checks.json` the
 * suite wrote under the output directory.
 *
 * Facts about the suite this relies on (read from its source and bundle):
 * - `server --requirements R` runs exactly the scenarios revision R lists (scored
 *   `server:` list + `not_scored:` entries with `leg: server`) on R's wire. It cannot
 *   be combined with `--scenario`/`--spec-version`/`--suite`.
 * - a single scenario runs with `server --scenario S --spec-version R`; without
 *   `--force` a scenario that is not applicable at R is SKIPPED (no checks.json,
 *   exit 0). A requirement-set run forces every listed scenario, so by default we
 *   pass `--force` when S is listed in R's requirement file.
 * - `-o DIR` writes `DIR/server-<scenario>-<ISO time, ':' and '.' -> '-'>/checks.json`:
 *   a JSON array of `{id, name, description, status, timestamp, errorMessage?,
 *   details?, specReferences?, logs?, source?}` with status SUCCESS | FAILURE |
 *   WARNING | SKIPPED | INFO. The wire-schema checks are appended to each scenario.
 *   A scenario that throws inside the runner gets a directory but no checks.json.
 * - exit code: with `--expected-failures FILE` it is the baseline verdict (1 on an
 *   unexpected FAILURE/WARNING or a stale entry); otherwise, for `--requirements`,
 *   1 iff a *scored* scenario has a FAILURE; for `--scenario`, 1 iff any FAILURE.
 * - `--timeout <ms>` (default 30000) bounds each scenario; a timed-out scenario is
 *   reported as a single FAILURE check `scenario-timeout`.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawnOwned, type Owner } from './processes.js';

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
export const CHECK_STATUSES: readonly CheckStatus[] = ['SUCCESS', 'FAILURE', 'WARNING', 'SKIPPED', 'INFO'];

export type RequirementsRevision = '2026-07-28' | '2025-11-25';

export interface ConformanceCheck {
  id: string;
  name?: string;
  description?: string;
  status: CheckStatus;
  /** The suite's `errorMessage`. */
  message?: string;
  details?: Record<string, unknown>;
  timestamp?: string;
}

export interface ScenarioReport {
  scenario: string;
  /**
   * true: in the revision's scored `server:` list; false: listed under `not_scored`; null: not in the requirement file
   * at all.
   */
  scored: boolean | null;
  /** `not_scored` reason (extension | pending | added-after-release) when scored === false. */
  notScoredReason?: string;
  /** Directory the suite wrote for this scenario. */
  resultDir: string;
  /**
   * true when the suite wrote no checks.json (the scenario threw inside the runner,
   * or the harness deadline killed the CLI). `checks` then holds one synthetic FAILURE
   * whose id is the scenario name, which is how the suite itself scores it.
   */
  missingChecksFile: boolean;
  checks: ConformanceCheck[];
}

export interface ConformanceFailure {
  scenario: string;
  id: string;
  message: string;
  status: 'FAILURE' | 'WARNING';
  scored: boolean | null;
}

export interface ConformanceReport {
  /** CLI exit code; null if it was killed (see timedOut/signal). */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  durationMs: number;
  scenarios: ScenarioReport[];
  /** Scenarios the suite skipped as not applicable at the spec version (single-scenario runs without --force). */
  skippedScenarios: string[];
  counts: Record<CheckStatus, number>;
  /** Every FAILURE check (status 'FAILURE'), in scenario order. */
  failures: ConformanceFailure[];
  /** Every WARNING check (the suite's baseline treats these as failures). */
  warnings: ConformanceFailure[];
  /** Parsed from stdout when `expectedFailuresFile` was given. */
  baseline?: { expected: string[]; unexpected: string[]; stale: string[] };
  stdout: string;
  stderr: string;
  /** argv after the node binary. */
  args: string[];
  /** Output directory (removed after parsing when the harness created it). */
  outDir: string;
  outDirRemoved: boolean;
}

export interface RunConformanceOptions {
  url: string;
  requirements: RequirementsRevision;
  /** Run one scenario at the `requirements` wire instead of the whole requirement set. */
  scenario?: string;
  /** YAML baseline passed as `--expected-failures`. */
  expectedFailuresFile?: string;
  /** Where the suite writes results. Default: a fresh temp dir, removed after parsing. */
  outDir?: string;
  /**
   * Hard deadline for the whole CLI run; the child is killed after it. Default 120000 (scenario) / 300000 (full set).
   */
  timeoutMs?: number;
  /** The suite's own per-scenario `--timeout`. Default: the suite's (30000). */
  scenarioTimeoutMs?: number;
  /** Single-scenario runs only: pass `--force`. Default: true iff the scenario is listed in the requirement file. */
  force?: boolean;
  /** Keep a harness-created temp outDir. */
  keepOutDir?: boolean;
  /** Extra environment for the child. */
  env?: NodeJS.ProcessEnv;
  /** The test that owns the CLI process (stopped when it ends); the root tap when none is given. */
  t?: Owner;
}

const require = createRequire(import.meta.url);

/** Absolute path of the suite's package directory. */
export function conformancePackageDir(): string {
  return dirname(require.resolve('@modelcontextprotocol/conformance/package.json'));
}

/** Absolute path of the suite's CLI entry (its `bin.conformance`). */
export function conformanceBin(): string {
  const dir = conformancePackageDir();
  const pkg = require(join(dir, 'package.json')) as { bin?: string | Record<string, string> };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : (pkg.bin?.conformance ?? 'dist/index.js');
  return join(dir, bin);
}

/**
 * Absolute path of test/conformance/node20-fs-hook.mjs. The helper runs compiled
 * from dist/test/helpers/ (or from test/helpers/ under a TS loader); the hook is
 * plain JS that stays in the source tree.
 */
export function node20FsHookPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    resolve(here, '../../../test/conformance/node20-fs-hook.mjs'), // dist/test/helpers -> test/conformance
    resolve(here, '../conformance/node20-fs-hook.mjs'), // test/helpers -> test/conformance
  ];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`node20-fs-hook.mjs not found (looked in ${candidates.join(', ')})`);
}

/** NODE_OPTIONS value with the fs hook appended (no-op on Node >= 22, where the hook does nothing). */
export function nodeOptionsWithHook(existing = process.env.NODE_OPTIONS ?? ''): string {
  const flag = `--import ${pathToFileURL(node20FsHookPath()).href}`;
  return existing.includes(flag) ? existing : `${existing} ${flag}`.trim();
}

interface RequirementSet {
  server: string[];
  notScored: Array<{ scenario: string; leg: string; reason: string; note?: string }>;
}

const requirementCache = new Map<string, RequirementSet>();

/** The suite's frozen requirement file for a revision (requirements/<rev>.yaml in the package). */
export async function loadRequirementSet(revision: RequirementsRevision): Promise<RequirementSet> {
  const cached = requirementCache.get(revision);
  if (cached) return cached;
  const dir = conformancePackageDir();
  // `yaml` is a declared dependency of the suite; resolve it from there.
  const yaml = createRequire(join(dir, 'package.json'))('yaml') as { parse(src: string): unknown };
  const doc = yaml.parse(await readFile(join(dir, 'requirements', `${revision}.yaml`), 'utf8')) as {
    server?: string[];
    not_scored?: Array<{ scenario: string; leg: string; reason: string; note?: string }>;
  };
  const set: RequirementSet = { server: doc.server ?? [], notScored: doc.not_scored ?? [] };
  requirementCache.set(revision, set);
  return set;
}

const RESULT_DIR_RE = /^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/;
// eslint-disable-next-line no-control-regex
const ANSI_RE = /\x1b\[[0-9;]*m/g;

function toCheck(raw: unknown): ConformanceCheck {
  const r = (raw ?? {}) as Record<string, unknown>;
  const status = CHECK_STATUSES.includes(r.status as CheckStatus) ? (r.status as CheckStatus) : 'FAILURE';
  const check: ConformanceCheck = { id: String(r.id ?? '(no id)'), status };
  if (typeof r.name === 'string') check.name = r.name;
  if (typeof r.description === 'string') check.description = r.description;
  if (typeof r.errorMessage === 'string') check.message = r.errorMessage;
  if (r.details && typeof r.details === 'object') check.details = r.details as Record<string, unknown>;
  if (typeof r.timestamp === 'string') check.timestamp = r.timestamp;
  if (!CHECK_STATUSES.includes(r.status as CheckStatus)) {
    check.message = `unknown status ${JSON.stringify(r.status)}${check.message ? `: ${check.message}` : ''}`;
  }
  return check;
}

/** Parse every `server-*` result directory under outDir. Exported for re-parsing a kept outDir. */
export async function readConformanceResults(
  outDir: string,
  requirements: RequirementsRevision,
): Promise<ScenarioReport[]> {
  const reqs = await loadRequirementSet(requirements);
  const scored = new Set(reqs.server);
  const entries = existsSync(outDir) ? await readdir(outDir) : [];
  const dirs: Array<{ name: string; scenario: string; time: string }> = [];
  for (const name of entries) {
    const m = RESULT_DIR_RE.exec(name);
    if (!m) continue;
    if (!(await stat(join(outDir, name))).isDirectory()) continue;
    dirs.push({ name, scenario: m[1]!, time: m[2]! });
  }
  dirs.sort((a, b) => (a.time === b.time ? a.name.localeCompare(b.name) : a.time.localeCompare(b.time)));

  const out: ScenarioReport[] = [];
  for (const d of dirs) {
    const resultDir = join(outDir, d.name);
    const file = join(resultDir, 'checks.json');
    const ns = reqs.notScored.find((e) => e.scenario === d.scenario && e.leg === 'server');
    const report: ScenarioReport = {
      scenario: d.scenario,
      scored: scored.has(d.scenario) ? true : ns ? false : null,
      resultDir,
      missingChecksFile: false,
      checks: [],
    };
    if (ns) report.notScoredReason = ns.reason;
    if (existsSync(file)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        parsed = [{ id: 'harness-unreadable-checks-json', status: 'FAILURE', errorMessage: String(err) }];
      }
      report.checks = Array.isArray(parsed)
        ? parsed.map(toCheck)
        : [
            toCheck({
              id: 'harness-unexpected-checks-json',
              status: 'FAILURE',
              errorMessage: 'checks.json is not an array',
            }),
          ];
    } else {
      report.missingChecksFile = true;
    }
    out.push(report);
  }
  return out;
}

function parseBaseline(stdout: string): { expected: string[]; unexpected: string[]; stale: string[] } {
  const res = { expected: [] as string[], unexpected: [] as string[], stale: [] as string[] };
  let section: keyof typeof res | undefined;
  for (const rawLine of stdout.replace(ANSI_RE, '').split('\n')) {
    const line = rawLine.trimEnd();
    if (line.startsWith('Expected failures (in baseline)')) section = 'expected';
    else if (line.startsWith('Stale baseline entries')) section = 'stale';
    else if (line.startsWith('Unexpected failures (not in baseline)')) section = 'unexpected';
    else if (section && /^ {2}[~✓✗] /.test(line)) res[section].push(line.slice(4).trim());
    else if (line.trim() !== '') section = undefined;
  }
  return res;
}

/**
 * Run the official conformance suite's `server` command against `url`.
 *
 * Never rejects because of check results; rejects only when the CLI cannot be
 * spawned at all. A run that exceeds `timeoutMs` is killed (SIGTERM, then
 * SIGKILL after 2 s) and reported with `timedOut: true` and whatever results
 * were written so far.
 */
export async function runConformance(opts: RunConformanceOptions): Promise<ConformanceReport> {
  const reqs = await loadRequirementSet(opts.requirements);
  const createdOutDir = opts.outDir === undefined;
  const outDir = opts.outDir ?? (await mkdtemp(join(tmpdir(), 'causeway-conformance-')));

  const args = [conformanceBin(), 'server', '--url', opts.url];
  if (opts.scenario !== undefined) {
    args.push('--scenario', opts.scenario, '--spec-version', opts.requirements);
    const listed =
      reqs.server.includes(opts.scenario) ||
      reqs.notScored.some((e) => e.scenario === opts.scenario && e.leg === 'server');
    if (opts.force ?? listed) args.push('--force');
  } else {
    args.push('--requirements', opts.requirements);
  }
  args.push('-o', outDir);
  if (opts.expectedFailuresFile !== undefined) args.push('--expected-failures', resolve(opts.expectedFailuresFile));
  if (opts.scenarioTimeoutMs !== undefined) args.push('--timeout', String(opts.scenarioTimeoutMs));

  const timeoutMs = opts.timeoutMs ?? (opts.scenario !== undefined ? 120_000 : 300_000);
  const started = Date.now();
  const child = spawnOwned(process.execPath, args, {
    t: opts.t,
    env: {
      ...process.env,
      ...opts.env,
      NODE_OPTIONS: nodeOptionsWithHook(opts.env?.NODE_OPTIONS ?? process.env.NODE_OPTIONS),
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));

  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  const deadline = setTimeout(() => {
    timedOut = true;
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), 2_000);
  }, timeoutMs);

  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res, rej) => {
    child.once('error', (err) => {
      clearTimeout(deadline);
      rej(err);
    });
    child.once('close', (c, s) => res({ code: c, signal: s }));
  });
  clearTimeout(deadline);
  if (killTimer) clearTimeout(killTimer);

  const scenarios = await readConformanceResults(outDir, opts.requirements);
  const skippedScenarios: string[] = [];
  for (const m of stdout.matchAll(/^SKIPPED: scenario '([^']+)' is not applicable/gm)) skippedScenarios.push(m[1]!);

  for (const s of scenarios) {
    if (!s.missingChecksFile || skippedScenarios.includes(s.scenario)) continue;
    // Same shape the suite itself scores such a scenario with (id = scenario name).
    s.checks.push({
      id: s.scenario,
      name: s.scenario,
      description: 'Failed to run scenario',
      status: 'FAILURE',
      message: timedOut
        ? 'the suite was killed by the harness deadline before writing checks.json'
        : 'the suite wrote no checks.json for this scenario (runner error; see stderr)',
    });
  }
  const reported = scenarios.filter((s) => !(s.missingChecksFile && skippedScenarios.includes(s.scenario)));

  const counts: Record<CheckStatus, number> = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 };
  const failures: ConformanceFailure[] = [];
  const warnings: ConformanceFailure[] = [];
  for (const s of reported) {
    for (const c of s.checks) {
      counts[c.status]++;
      if (c.status === 'FAILURE' || c.status === 'WARNING') {
        (c.status === 'FAILURE' ? failures : warnings).push({
          scenario: s.scenario,
          id: c.id,
          message: c.message ?? c.description ?? c.name ?? '',
          status: c.status,
          scored: s.scored,
        });
      }
    }
  }

  let outDirRemoved = false;
  if (createdOutDir && !opts.keepOutDir) {
    await rm(outDir, { recursive: true, force: true });
    outDirRemoved = true;
  }

  const report: ConformanceReport = {
    exitCode: code,
    signal,
    timedOut,
    durationMs: Date.now() - started,
    scenarios: reported,
    skippedScenarios,
    counts,
    failures,
    warnings,
    stdout,
    stderr,
    args: args,
    outDir,
    outDirRemoved,
  };
  if (opts.expectedFailuresFile !== undefined) report.baseline = parseBaseline(stdout);
  return report;
}

/** The scenarios of a run that count for its score. */
export function scoredScenarios(report: ConformanceReport): ScenarioReport[] {
  return report.scenarios.filter((s) => s.scored === true);
}

/** The scored scenarios every check of which passed (no failure, no warning). */
export function passingScenarios(report: ConformanceReport): ScenarioReport[] {
  return scoredScenarios(report).filter((s) => s.checks.every((c) => c.status !== 'FAILURE' && c.status !== 'WARNING'));
}

/** Checks of one scenario, or [] if it did not run. */
export function scenarioChecks(report: ConformanceReport, scenario: string): ConformanceCheck[] {
  return report.scenarios.find((s) => s.scenario === scenario)?.checks ?? [];
}

/** One-line-per-failure text, for assertion messages. */
export function formatFailures(report: ConformanceReport): string {
  return [...report.failures, ...report.warnings]
    .map((f) => `${f.status} ${f.scenario}:${f.id}${f.scored === false ? ' (not scored)' : ''} — ${f.message}`)
    .join('\n');
}
