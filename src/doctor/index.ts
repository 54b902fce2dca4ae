// `causeway doctor URL`: a readiness report for one server before traffic goes to it (the
// command is command.ts; the checks diagnose.ts; the report report.ts). Only main.ts uses it.

export { runDoctor } from './command.js';
