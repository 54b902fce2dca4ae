// skill:// URIs [SKILLS "Resource Mapping"]: skill://<prefix>/<name>/<path>, each segment
// percent-encoded one way, so that a URI a client sends is found by re-encoding its decoded
// segments. A URI with `.` or `..` segments, an encoded separator, a query or a fragment names
// nothing in the folder: it is refused, never resolved.

export const SKILL_SCHEME = 'skill://';

/**
 * Characters kept as they are in a path segment (unreserved and sub-delims, `:` and `@`); the rest is percent-encoded.
 */
const ENCODED = /[^A-Za-z0-9\-._~!$&'()*+,;=:@]/gu;

export function encodeSegment(segment: string): string {
  return segment.replace(ENCODED, (c) => encodeURIComponent(c));
}

/** The URI of `segments` (prefix, skill name, path within the skill), each encoded. */
export function skillUri(segments: readonly string[]): string {
  return SKILL_SCHEME + segments.map(encodeSegment).join('/');
}

export type UriLookup =
  /** The canonical spelling to look the URI up by. */
  | { ok: true; key: string }
  /** Not a skill:// URI: none of the folder's business. */
  | { ok: false; foreign: true }
  /** A skill:// URI that could only reach outside a skill: refused with the reason. */
  | { ok: false; foreign: false; reason: string };

/** How a URI a client sent is looked up: its canonical spelling, or why it is refused. */
export function lookupKey(uri: string): UriLookup {
  if (!uri.toLowerCase().startsWith(SKILL_SCHEME)) return { ok: false, foreign: true };
  const rest = uri.slice(SKILL_SCHEME.length);
  if (/[?#\\]/.test(rest))
    return { ok: false, foreign: false, reason: 'a skill URI has no query, fragment or backslash' };
  const segments = rest.split('/');
  const out: string[] = [];
  for (const raw of segments) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return { ok: false, foreign: false, reason: 'a segment is not valid percent-encoding' };
    }
    if (decoded === '' || decoded === '.' || decoded === '..')
      return { ok: false, foreign: false, reason: 'empty, . and .. segments are not allowed' };
    if (/[/\\\0]/.test(decoded))
      return { ok: false, foreign: false, reason: 'a segment may not hold an encoded separator or NUL' };
    out.push(decoded);
  }
  return { ok: true, key: skillUri(out) };
}
