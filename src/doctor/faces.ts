// What each client era gets through Causeway in front of this server: the README's support
// matrix (one upstream), read at the transport and era found, and what a session-less or
// GET-less server takes away.

import type { Era, Report, Transport } from './report.js';

export function facesOf(transport: Transport, era: Era, session: Report['session']): NonNullable<Report['faces']> {
  if (era === 'modern') {
    return transport === 'stdio'
      ? {
          modernClients: "relayed as sent over the child's stdin (upstream.stdioPool children serve every principal)",
          legacyClients: 'translated legacy face: initialize from server/discover, input_required as real requests',
        }
      : {
          modernClients: 'relayed as sent, with auth, credentials, limits, routing, metrics, traces and cache',
          legacyClients: 'translated legacy face: initialize from server/discover, input_required as real requests',
        };
  }
  switch (transport) {
    case 'stdio':
      return {
        modernClients: 'translated face over pooled sessions, a child process per pooled session',
        legacyClients: "Causeway's legacy face, a child process per client session",
      };
    case 'sse':
      return {
        modernClients: 'translated face over pooled sessions, an HTTP+SSE connection per pooled session',
        legacyClients: "Causeway's legacy face, an HTTP+SSE connection per client session",
      };
    case 'streamable-http': {
      const sessionless = session !== undefined && !session.sessionful;
      const noGet = session?.sessionful === true && session.getStream !== 'served';
      const limits = sessionless
        ? ' (session-less: no multi-round calls, no changes heard outside a call)'
        : noGet
          ? ' (no GET stream: no asks or changes outside a call)'
          : '';
      return {
        modernClients: `translated face over pooled sessions${limits}`,
        legacyClients: 'passed through byte for byte, sessions bound to their principal',
      };
    }
  }
}
