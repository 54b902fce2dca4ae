// The command: read the flags, run the checks, print the report (text or --json) and hand back
// the exit status. Bad flags are exit 2 with the loader's list of problems, as for `causeway`.

import { ConfigError } from '../config/index.js';
import { createLogger } from '../log.js';
import { diagnose } from './diagnose.js';
import { DOCTOR_USAGE, DoctorUsageError, doctorOptions } from './options.js';
import { renderText } from './render.js';

export interface DoctorIo {
  out(text: string): Promise<void>;
  err(text: string): Promise<void>;
}

/** Runs `causeway doctor` with the arguments after `doctor`; resolves the exit status. */
export async function runDoctor(argv: readonly string[], env: NodeJS.ProcessEnv, io: DoctorIo): Promise<number> {
  let options;
  try {
    options = doctorOptions(argv, env);
  } catch (err) {
    if (!(err instanceof ConfigError) && !(err instanceof DoctorUsageError)) throw err;
    await io.err(`${err.message}\n\n${DOCTOR_USAGE}`);
    return 2;
  }
  if (options === 'help') {
    await io.out(DOCTOR_USAGE);
    return 0;
  }
  // Logs go to stderr, and only when asked for: stdout is the report.
  const log = createLogger(options.logLevel, process.stderr);
  const report = await diagnose(options.spec, log.child({ stage: 'doctor', upstream: options.spec.name }));
  await io.out(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderText(report));
  return report.exitCode;
}
