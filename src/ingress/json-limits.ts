// Nesting depth and item count of a JSON text, measured in one iterative pass over its bytes
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

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/**
 * The first limit the text exceeds, or undefined. Malformed text is not diagnosed here (the
 * parser does that); it is only measured. UTF-8 continuation bytes are >= 0x80, so a quote or
 * backslash byte is always the ASCII character.
 */
export function exceededLimit(text: Uint8Array, limits: JsonLimits): JsonLimitExceeded | undefined {
  let depth = 0;
  let items = 0;
  let inString = false;
  // Just after an opening bracket: the next value, if any, is the container's first item.
  let opened = false;
  for (let i = 0; i < text.length; i++) {
    const b = text[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      continue;
    }
    if (isSpace(b)) continue;
    if (opened) {
      opened = false;
      if (b !== CLOSE_OBJECT && b !== CLOSE_ARRAY && ++items > limits.maxItems) return 'items';
    }
    switch (b) {
      case QUOTE:
        inString = true;
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
