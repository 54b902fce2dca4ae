// Node 20 shim for @modelcontextprotocol/conformance (declares Node >= 22).
//
// The suite's bundle does `import { globSync } from 'fs'`; Node 20's `fs` has no
// `globSync`, so the import fails at link time. Only the suite's `tier-check`
// command ever calls it. Load this file with
//   NODE_OPTIONS="--import <file URL of this file>"
// and every `fs` / `node:fs` import made from inside the suite's package resolves
// to a wrapper that re-exports node:fs plus a `globSync` that throws if called.
// Everywhere else (and on Node >= 22, where fs.globSync exists) nothing changes.
import * as fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  const wrapper =
    "export * from 'node:fs'; export { default } from 'node:fs';\n" +
    'export function globSync() { throw new Error(' +
    JSON.stringify(
      'fs.globSync is not available on Node ' +
        process.versions.node +
        ' (causeway conformance shim); use Node >= 22 for this command',
    ) +
    '); }\n';
  const wrapperUrl = 'data:text/javascript,' + encodeURIComponent(wrapper);
  const hooks =
    'export async function resolve(specifier, context, next) {\n' +
    "  if ((specifier === 'fs' || specifier === 'node:fs') &&\n" +
    "      context.parentURL && context.parentURL.includes('/@modelcontextprotocol/conformance/')) {\n" +
    '    return { url: ' +
    JSON.stringify(wrapperUrl) +
    ', shortCircuit: true };\n' +
    '  }\n' +
    '  return next(specifier, context);\n' +
    '}\n';
  register('data:text/javascript,' + encodeURIComponent(hooks));
}
