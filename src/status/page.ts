// The status page (/status): the view (view.ts) rendered as one HTML document on the server, with
// its style and its one script inline and nothing fetched from anywhere else (its
// Content-Security-Policy allows nothing else), so it works offline and behind any proxy. The
// script fetches the page again every REFRESH_SECONDS and swaps its <main> in, keeping the
// credentials the browser sent; without script a meta refresh does the same. Tables scroll
// sideways on a narrow screen. Every value is escaped: client names are the clients' own words.

import { createHash } from 'node:crypto';
import type { ReplicaRow, UpstreamRow } from './part.js';
import type { ClientRow, TrafficRow } from './traffic.js';
import type { StatusView } from './view.js';

export const REFRESH_SECONDS = 5;

const STYLE = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--mute:#5c6670;--line:#d8dde3;--card:#f5f7f9;
--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--legacy:#8250df;--modern:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8d96a0;--line:#30363d;
--card:#161b22;--ok:#3fb950;--warn:#d29922;--bad:#f85149;--legacy:#a371f7;--modern:#4493f8}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
header,main{max-width:1100px;margin:0 auto;padding:12px 16px}
header{display:flex;flex-wrap:wrap;align-items:baseline;gap:8px 16px;border-bottom:1px solid var(--line)}
h1{font-size:1.3rem;margin:0}
h2{font-size:1.05rem;margin:24px 0 8px}
.mute{color:var(--mute);font-size:.85rem}
code{font:13px/1.3 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
code.nw{white-space:nowrap;word-break:normal}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:8px;margin-top:12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 10px}
.card b{display:block;font-size:1.35rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--mute);font-size:.85rem}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.pill{display:inline-block;padding:0 8px;border-radius:10px;font-size:.8rem;border:1px solid currentColor}
.legacy{color:var(--legacy)}.modern{color:var(--modern)}.up,.ok{color:var(--ok)}
.failing,.warn{color:var(--warn)}.ejected,.bad{color:var(--bad)}
@media (max-width:600px){body{font-size:14px}header,main{padding:10px}}
`;

const SCRIPT = `(function () {
  var state = document.getElementById('state');
  function tell(text, cls) { state.textContent = text; state.className = 'pill ' + cls; }
  function refresh() {
    fetch(location.pathname, { cache: 'no-store', credentials: 'same-origin' })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (text) {
        var next = new DOMParser().parseFromString(text, 'text/html').querySelector('main');
        var main = document.querySelector('main');
        if (next && main) main.replaceWith(document.adoptNode(next));
        tell('live', 'ok');
      })
      .catch(function () { tell('stale', 'bad'); });
  }
  setInterval(refresh, ${REFRESH_SECONDS * 1000});
})();`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** Nothing but the page's own style and script, and fetches of itself. */
export const PAGE_POLICY = [
  "default-src 'none'",
  `style-src ${hash(STYLE)}`,
  `script-src ${hash(SCRIPT)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function esc(v: unknown): string {
  return String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function renderPage(view: StatusView): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Causeway status</title>
<noscript><meta http-equiv="refresh" content="${REFRESH_SECONDS}"></noscript>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>Causeway status</h1>
<span class="mute">every ${REFRESH_SECONDS} s</span>
<span id="state" class="pill ok">live</span>
</header>
${renderMain(view)}
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function renderMain(v: StatusView): string {
  const t = v.totals;
  const cards: Array<[string, number | string]> = [
    ['Replicas', v.replicas.length],
    ['Pooled sessions', t.pooledSessions],
    ['Standing streams', t.standingStreams],
    ['Held calls', t.heldCalls],
    ['Listens', t.listens],
    ['Tasks', t.tasks],
    ['In flight', t.inFlight],
    ['Cache hits', t.cache.hits],
    ['Cache misses', t.cache.misses],
    ['Cache bytes', t.cache.bytes],
  ];
  const partial = v.partial ? ' · <span class="bad">other replicas unreadable: this one alone</span>' : '';
  return `<main>
<p class="mute">Answered by replica ${code(v.replica)} at ${esc(when(v.generatedAt))}
· store ${esc(v.store)}${partial}</p>
<div class="cards">${cards.map(card).join('')}</div>
<h2>Migration: requests by client revision, upstream and era</h2>
${table(
  ['Client revision', 'Upstream', 'Upstream era', '#Last minute', '#Since start'],
  v.traffic.map(trafficRow),
  'No requests yet.',
)}
<h2>Clients</h2>
${table(['Name', 'Version', 'Revision', '#Requests'], v.clients.map(clientRow), 'No client has named itself yet.')}
<h2>Upstreams</h2>
${table(['Name', 'Era', 'Transport', 'URLs', '#Pooled'], v.upstreams.map(upstreamRow), 'No upstream.')}
<h2>Replicas</h2>
${table(
  ['Replica', 'Version', 'Started', 'State', '#Pooled', '#Standing', '#Held', '#Listens', '#Tasks', 'Cache'],
  v.replicas.map(replicaRow),
  'No replica.',
)}
<h2>Skills</h2>
${table(
  ['Mount', '#Loaded', '#Broken'],
  v.skills.map((s) => [code(s.mount), num(s.loaded), num(s.broken)]),
  'No skills folder.',
)}
</main>`;
}

/** An ISO time as people read it: to the second, in UTC. */
const when = (iso: string) => iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
const card = ([k, n]: [string, number | string]) =>
  `<div class="card"><span class="mute">${esc(k)}</span><b>${esc(n)}</b></div>`;
const code = (v: unknown) => `<code>${esc(v)}</code>`;
/** A short value that must not break (a revision). */
const word = (v: unknown) => `<code class="nw">${esc(v)}</code>`;
const num = (n: number) => ({ n: esc(n) });
const pill = (v: string) => `<span class="pill ${esc(v)}">${esc(v)}</span>`;

type Cell = string | { n: string };

/** A table; a heading starting with # is a number column. */
function table(heads: readonly string[], rows: ReadonlyArray<readonly Cell[]>, empty: string): string {
  if (rows.length === 0) return `<p class="mute">${esc(empty)}</p>`;
  const th = heads.map((h) => (h.startsWith('#') ? `<th class="n">${esc(h.slice(1))}</th>` : `<th>${esc(h)}</th>`));
  const tr = rows.map(
    (r) => `<tr>${r.map((c) => (typeof c === 'string' ? `<td>${c}</td>` : `<td class="n">${c.n}</td>`)).join('')}</tr>`,
  );
  return (
    `<div ` +
    `class="scroll"><table><thead><tr>${th.join('')}</tr></thead><tbody>${tr.join('\n')}</tbody></table></div>`
  );
}

function trafficRow(r: TrafficRow): Cell[] {
  return [word(r.clientRevision), esc(r.upstream), pill(r.upstreamEra), num(r.lastMinute), num(r.requests)];
}

function clientRow(c: ClientRow): Cell[] {
  return [esc(c.name), esc(c.version), word(c.revision), num(c.requests)];
}

function upstreamRow(u: UpstreamRow): Cell[] {
  const urls = u.urls.map(
    (x) =>
      `${code(x.url)} ${pill(x.state)}${x.ejectedOn > 0 ? ` <span class="mute">on ${esc(x.ejectedOn)}</span>` : ''}`,
  );
  return [
    esc(u.name),
    `${pill(u.era)} <span class="mute">${esc(u.eraFound)}</span>`,
    esc(u.transport),
    urls.join('<br>') || '<span class="mute">(none)</span>',
    num(u.pooledSessions),
  ];
}

function replicaRow(r: ReplicaRow & { self: boolean }): Cell[] {
  const state = r.draining ? '<span class="pill warn">draining</span>' : '<span class="pill ok">serving</span>';
  return [
    `${code(r.id)}${r.self ? ' <span class="mute">(this one)</span>' : ''}`,
    `${esc(r.version)} <span class="mute">config ${code(r.config)}</span>`,
    esc(when(r.started)),
    state,
    num(r.pooledSessions),
    num(r.standingStreams),
    num(r.heldCalls),
    num(r.listens),
    num(r.tasks),
    `${esc(r.cache.hits)} hit · ${esc(r.cache.misses)} miss · ${esc(r.cache.bytes)} B`,
  ];
}
