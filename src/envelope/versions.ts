// Protocol revisions on each side of Causeway.

import { MODERN_VERSION } from '../version.js';

export const MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];

export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

export function isModernVersion(v: string): boolean {
  return MODERN_VERSIONS.includes(v);
}

export function isLegacyVersion(v: string): boolean {
  return LEGACY_VERSIONS.includes(v);
}

/** Revisions before 2025-06-18 have no MCP-Protocol-Version header [T0326]. */
export function sendsVersionHeader(negotiated: string): boolean {
  return negotiated !== '2025-03-26' && negotiated !== '2024-11-05';
}

/** A revision a client stated, as a bounded label: a known revision, `none` when absent, else `_other`. */
export function revisionLabel(v: unknown): string {
  if (v === undefined) return 'none';
  return typeof v === 'string' && (isModernVersion(v) || isLegacyVersion(v)) ? v : '_other';
}
