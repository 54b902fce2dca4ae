#!/usr/bin/env node
// bin `causeway`: load the config, start serving, reload it on SIGHUP, drain gracefully on SIGTERM / SIGINT.

import { constants } from 'node:os';
import { createApp } from './app.js';
import { runDoctor } from './doctor/index.js';
import { ConfigError, configFile, helpText, loadConfig } from './config/index.js';
import { StartupError } from './errors.js';
import { createLogger } from './log.js';
import { createStore, storeReady } from './pool/index.js';
import { startTelemetry, type Telemetry } from './tracing/index.js';
import { VERSION } from './version.js';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'doctor') {
    const write = (stream: NodeJS.WriteStream) => (text: string) =>
      new Promise<void>((resolve) => stream.write(text, () => resolve()));
    const io = { out: write(process.stdout), err: write(process.stderr) };
    // Exit at once: the report is written, and every session and child the doctor opened is ended.
    process.exit(await runDoctor(argv.slice(1), process.env, io));
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(VERSION));
    return;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  let config;
  try {
    config = loadConfig(argv, process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.log.level);
  let telemetry: Telemetry | undefined;
  try {
    telemetry = await startTelemetry(process.env, log);
  } catch (err) {
    log.warn({ err }, 'OpenTelemetry could not start; serving without it');
  }
  let store;
  try {
    store = createStore(config, log.child({ stage: 'store' }));
  } catch (err) {
    process.stderr.write(`invalid configuration:\n  ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  // A shared store gets a moment to connect; without it Causeway still starts, with replica-local sessions.
  if (!(await storeReady(store, 2_000)))
    log.warn({ store: store.kind }, 'session store not reachable at start; serving with replica-local sessions');
  // A reload reads the file again, under the same environment and flags.
  const env = { ...process.env };
  const source = { file: configFile(argv, env), load: (text: string | undefined) => loadConfig(argv, env, text) };
  const app = createApp(config, log, store, source);
  const addr = await app.listen();
  log.info({ url: app.url, mounts: app.mounts, port: addr.port, adminUrl: app.adminUrl }, 'causeway listening');
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    // A second signal is someone who will not wait for the drain: exit now, as that signal would.
    if (stopping) {
      log.warn({ signal }, 'second signal during the drain: exiting at once, requests in flight are cut');
      process.exit(128 + (constants.signals[signal] ?? 0));
    }
    stopping = true;
    log.info({ signal }, 'draining');
    // Spans of the requests the drain waited for are exported before the exit.
    app
      .drain()
      .then(() => telemetry?.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'drain failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGHUP', () => void app.reload('SIGHUP'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  // A port another process holds: the message names the setting to change.
  if (err instanceof StartupError) {
    process.stderr.write(`causeway cannot start: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`causeway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
