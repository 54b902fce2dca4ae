// The JSON limits scanner (src/ingress/json-limits.ts) reads the decoded text and jumps over
// strings with indexOf. Its answers must be those of the plain reading it replaced: the UTF-8
// bytes one at a time, a backslash skipping the byte after it. Checked on chosen cases and on
// random texts built from the characters that matter (brackets, commas, quotes, backslash runs,
// spaces, characters outside ASCII, bytes that are not UTF-8).

import t from 'tap';
import { exceededLimit, type JsonLimits } from '../../src/ingress/json-limits.js';

/** The reading by bytes: what the scanner answered before it read text. */
function byBytes(bytes: Uint8Array, limits: JsonLimits): 'depth' | 'items' | undefined {
  let depth = 0;
  let items = 0;
  let inString = false;
  let opened = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
      continue;
    }
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    if (opened) {
      opened = false;
      if (b !== 0x7d && b !== 0x5d && ++items > limits.maxItems) return 'items';
    }
    if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > limits.maxDepth) return 'depth';
      opened = true;
    } else if (b === 0x7d || b === 0x5d) depth--;
    else if (b === 0x2c && depth > 0 && ++items > limits.maxItems) return 'items';
  }
  return undefined;
}

const scan = (bytes: Buffer, limits: JsonLimits) => exceededLimit(bytes.toString('utf8'), limits);

t.test('chosen texts', async (t) => {
  const L = { maxDepth: 3, maxItems: 4 };
  const cases: Array<[string, 'depth' | 'items' | undefined]> = [
    ['{"a":[1,2]}', undefined],
    ['[[[1]]]', undefined],
    ['[[[[1]]]]', 'depth'],
    ['[1,2,3,4]', undefined],
    ['[1,2,3,4,5]', 'items'],
    // Brackets and commas inside strings are not structure, however the quotes are escaped.
    ['["[[[[,,,,,"]', undefined],
    ['["a\\"[[[[,,,,"]', undefined],
    ['["a\\\\",[[[1]]]]', 'depth'],
    ['["a\\\\\\"[[[["]', undefined],
    ['["\\\\\\\\"]', undefined],
    ['["é[[[[", "日本[[[["]', undefined],
    // Never closed: what follows the quote is the string's.
    ['["[[[[[[', undefined],
    ['{}', undefined],
    ['[]', undefined],
    ['[ ]', undefined],
    ['', undefined],
  ];
  for (const [text, want] of cases) {
    const bytes = Buffer.from(text);
    t.equal(scan(bytes, L), want, text);
    t.equal(byBytes(bytes, L), want, `${text} (by bytes)`);
  }
});

t.test('random texts: the same answer as the reading by bytes', async (t) => {
  // A seeded generator: a failure names its seed and can be replayed.
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  const pieces: Buffer[] = ['{', '}', '[', ']', ',', '"', '\\', '\\\\', '\\"', ' ', '\n', 'a', '1', ':', 'é', '日'].map(
    (p) => Buffer.from(p),
  );
  pieces.push(Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0x80]));
  let compared = 0;
  for (let n = 0; n < 20_000; n++) {
    const at = seed;
    const parts: Buffer[] = [];
    const len = 1 + Math.floor(next() * 40);
    for (let i = 0; i < len; i++) parts.push(pieces[Math.floor(next() * pieces.length)]!);
    const bytes = Buffer.concat(parts);
    // Half the time items cannot be exceeded, so the bracket count alone decides (the short cut).
    const maxItems = next() < 0.5 ? 1 + Math.floor(next() * 8) : 1000;
    const limits = { maxDepth: 1 + Math.floor(next() * 6), maxItems };
    const got = scan(bytes, limits);
    const want = byBytes(bytes, limits);
    if (got !== want) {
      t.fail(
        `seed ${at}: ${JSON.stringify(bytes.toString('latin1'))} ${JSON.stringify(limits)}: ${got} ` +
          `instead of ${want}`,
      );
      return;
    }
    compared++;
  }
  t.equal(compared, 20_000, 'every text read alike');
});
