// Nesting depth and item count of a JSON text, measured in one iterative pass over its text
// before anything parses or walks it: every later recursive walk (canonical JSON, stringify,
// capability translation) is then bounded by maxDepth, and a body of 100k tiny members is
// refused before it costs anything.

export interface JsonLimits {
  maxDepth: number;
  /** Object members plus array elements, over the whole text. */
  maxItems: number;
}

export type JsonLimitExceeded = 'depth' | 'items';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Where the string opened at `from` ends: its closing quote, the first one not escaped (an odd run
 * of backslashes before it); -1 if it never closes. Found with indexOf, not a character at a time:
 * most of a JSON text is inside strings.
 */
function stringEnd(text: string, from: number): number {
  let quote = from;
  for (;;) {
    quote = text.indexOf('"', quote + 1);
    if (quote < 0) return -1;
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote;
  }
}

/**
 * Whether the text holds at most `n` opening brackets, in strings or not: then no nesting in it
 * is deeper than `n`. Most requests are small and shallow, and two indexOf walks cost far less
 * than the scan below. (Nor can a text hold more items than characters.)
 */
function bracketsAtMost(text: string, n: number): boolean {
  let count = 0;
  for (let i = text.indexOf('{'); i >= 0; i = text.indexOf('{', i + 1)) if (++count > n) return false;
  for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) if (++count > n) return false;
  return true;
}

/**
 * The first limit the text exceeds, or undefined. Malformed text is not diagnosed here (the
 * parser does that); it is only measured. Read as the parser reads it, decoded: a character
 * outside ASCII is never a quote, a bracket or a comma, so nothing the decoding made of bytes
 * that are not UTF-8 changes the count.
 */
export function exceededLimit(text: string, limits: JsonLimits): JsonLimitExceeded | undefined {
  if (text.length <= limits.maxItems && bracketsAtMost(text, limits.maxDepth)) return undefined;
  let depth = 0;
  let items = 0;
  // Just after an opening bracket: the next value, if any, is the container's first item.
  let opened = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) continue;
    if (opened) {
      opened = false;
      if (c !== CLOSE_OBJECT && c !== CLOSE_ARRAY && ++items > limits.maxItems) return 'items';
    }
    switch (c) {
      case QUOTE:
        i = stringEnd(text, i);
        if (i < 0) return undefined;
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (++depth > limits.maxDepth) return 'depth';
        opened = true;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        depth--;
        break;
      case COMMA:
        if (depth > 0 && ++items > limits.maxItems) return 'items';
        break;
    }
  }
  return undefined;
}
