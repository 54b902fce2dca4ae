// The TypeScript files under a folder, for the tests that read the source itself (its imports, its
// sizes, the shape of the tests).

import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts file under `dir`, subfolders included, as full paths. */
export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}
