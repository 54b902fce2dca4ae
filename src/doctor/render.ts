// The report as text: one section per check, in the order they ran, the problems last and the
// verdict on the final line. Only what was found is shown.

import type { ListCount, Report } from './report.js';

const LISTED = ['tools', 'prompts', 'resources'] as const;
const VERDICT = { ready: 'READY', blocked: 'BLOCKED', unreachable: 'UNREACHABLE' } as const;

function count(c: ListCount | undefined): string {
  if (c === undefined) return 'not declared';
  return `${c.count}${c.complete ? '' : ` (incomplete: ${c.error ?? 'cut short'})`}`;
}

function authLines(auth: NonNullable<Report['auth']>): string[] {
  const lines = [`auth:       ${auth.required ? 'required' : 'not required'} (credentials given: ${auth.credentials})`];
  if (auth.challenge !== undefined) lines.push(`  challenge:  ${auth.challenge}`);
  if (auth.metadataUrl !== undefined) lines.push(`  metadata:   ${auth.metadataUrl}`);
  if (auth.resource !== undefined) lines.push(`  resource:   ${auth.resource}`);
  if (auth.authorizationServers !== undefined)
    lines.push(`  authorization servers: ${auth.authorizationServers.join(', ') || 'none listed'}`);
  if (auth.scopesSupported !== undefined) lines.push(`  scopes:     ${auth.scopesSupported.join(' ')}`);
  if (auth.metadataError !== undefined) lines.push(`  metadata:   not read (${auth.metadataError})`);
  return lines;
}

function serverLines(r: Report): string[] {
  const s = r.server;
  if (s === undefined) return [];
  const caps = Object.keys(s.capabilities);
  const supports = s.supportedVersions ? ` (supports ${s.supportedVersions.join(', ')})` : '';
  const lines = [
    `server:     ${s.name ?? '(no name)'} ${s.version ?? ''}`.trimEnd(),
    `  protocol:   ${s.protocolVersion ?? 'unknown'}${supports}`,
    `  capabilities: ${caps.length > 0 ? caps.join(', ') : 'none'}`,
    `  instructions: ${s.instructionsLength} characters`,
  ];
  if (r.session) {
    lines.push(
      `session:    ${r.session.sessionful ? 'sessionful' : 'session-less'} (${r.session.how})` +
        (r.session.ended ? '; ended' : ''),
    );
    lines.push(`GET stream: ${r.session.getStream} (${r.session.getStreamHow})`);
  }
  if (r.listChanged) {
    const lc = r.listChanged;
    lines.push(`listChanged: ${LISTED.map((k) => `${k} ${lc[k] ? 'yes' : 'no'}`).join(', ')}`);
  }
  return lines;
}

function toolLines(r: Report): string[] {
  const lines: string[] = [];
  if (r.lists) {
    const l = r.lists;
    lines.push(
      `lists:      tools ${count(l.tools)}, prompts ${count(l.prompts)}, resources ${count(l.resources)}, ` +
        `templates ${count(l.resourceTemplates)}`,
    );
  }
  const tools = r.tools ?? [];
  const bad = tools.filter((t) => !Array.isArray(t.paramHeaders));
  const headers = tools.filter((t) => Array.isArray(t.paramHeaders) && t.paramHeaders.length > 0);
  if (tools.length > 0) {
    lines.push(
      `Mcp-Param-*: ${headers.length} tool(s) with headers, ${bad.length} whose annotations cannot become headers`,
    );
    for (const t of bad) if (!Array.isArray(t.paramHeaders)) lines.push(`  ${t.name}: ${t.paramHeaders.problem}`);
    const bySupport = (s: string) => tools.filter((t) => t.taskSupport === s).map((t) => t.name);
    const tasks = ['required', 'optional'].map((s) => `${s}: ${bySupport(s).join(', ') || 'none'}`);
    lines.push(`taskSupport: ${tasks.join('; ')}; forbidden: ${bySupport('forbidden').length} tool(s)`);
  }
  return lines;
}

export function renderText(r: Report): string {
  const where = r.target.url ?? r.target.command ?? '';
  const lines = [`causeway doctor: ${where}`];
  if (r.transport) lines.push(`transport:  ${r.transport.found} (${r.transport.how})`);
  if (r.era) lines.push(`era:        ${r.era.found} (${r.era.how})`);
  if (r.auth) lines.push(...authLines(r.auth));
  lines.push(...serverLines(r), ...toolLines(r));
  if (r.faces) {
    lines.push('through Causeway:');
    lines.push(`  2026 clients:   ${r.faces.modernClients}`);
    lines.push(`  legacy clients: ${r.faces.legacyClients}`);
  }
  for (const p of r.problems) lines.push(`${p.blocking ? 'BLOCKING' : 'warning'}: ${p.message}`);
  lines.push(`${VERDICT[r.status]} (exit ${r.exitCode})`);
  return lines.join('\n') + '\n';
}
