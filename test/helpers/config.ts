// What the real config loader says of a configuration: the problems it lists, or none.

import { ConfigError, loadConfig } from '../../src/config/load.js';

/** The problems `loadConfig` reports for `argv` and `env`, or [] when it accepts them. */
export function configProblems(argv: readonly string[], env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadConfig(argv, env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}
