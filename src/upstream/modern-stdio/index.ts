// A 2026-07-28 server run as a child process: a small pool of children shared by every principal
// (pool.ts), each request an exchange on one child's stdio (child.ts), answered as HTTP would
// answer it (answer.ts), so ModernClient, the relay and the legacy face read it unchanged.

export { ModernStdioPool, type ModernStdioOptions } from './pool.js';
