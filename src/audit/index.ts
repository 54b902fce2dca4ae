export { AUDITED, whoOf, writeAudit, type AuditedCall, type AuditEnd, type Who } from './record.js';
export { AnswerTap } from './tap.js';
