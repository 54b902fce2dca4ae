// The kubectl that test/deploy renders the overlays with: the one on PATH, else the one
// test/setup.sh fetched into node_modules/.cache/causeway on a machine that has none.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const FETCHED_KUBECTL = fileURLToPath(new URL('../../../node_modules/.cache/causeway/kubectl', import.meta.url));

export function kubectl(): string {
  const onPath = spawnSync('kubectl', ['kustomize', '--help'], { stdio: 'ignore' }).status === 0;
  if (onPath || !existsSync(FETCHED_KUBECTL)) return 'kubectl';
  return FETCHED_KUBECTL;
}
