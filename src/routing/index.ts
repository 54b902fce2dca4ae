export { principalHash, type PrincipalPolicy } from './principal.js';
export { Federation } from './federation.js';
export type { Mount } from './mount.js';
export { compileRules } from './rules.js';
