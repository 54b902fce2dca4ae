// What a strict JSON parser refuses and JSON.parse lets pass: an object naming a key twice (the
// last one wins silently). Log collectors that parse strictly drop such lines whole.

/** The keys named twice in one object of `text`, a JSON text; [] when there are none. */
export function duplicateKeys(text: string): string[] {
  const found: string[] = [];
  // One frame per open object (its keys so far, and whether a key comes next) or array (null).
  const frames: Array<{ keys: Set<string>; keyNext: boolean } | null> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') frames.push({ keys: new Set(), keyNext: true });
    else if (c === '[') frames.push(null);
    else if (c === '}' || c === ']') frames.pop();
    else if (c === ',') {
      const top = frames.at(-1);
      if (top) top.keyNext = true;
    } else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = frames.at(-1);
      if (top?.keyNext) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) found.push(key);
        top.keys.add(key);
        top.keyNext = false;
      }
      i = j;
    }
  }
  return found;
}

/** The lines of `logs` a strict parser would refuse, with the keys they repeat. */
export function strictlyInvalid(logs: readonly string[]): string[] {
  return logs.flatMap((line) => {
    const dup = duplicateKeys(line);
    return dup.length > 0 ? [`${dup.join(', ')} twice in ${line.slice(0, 300)}`] : [];
  });
}
