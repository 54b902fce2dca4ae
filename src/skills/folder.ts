// A mount's skills folders, loaded at start and watched: any change below a root (a file
// edited, added or removed, a ConfigMap's `..data` swapped) loads the whole catalog again, once
// the changes have settled, and requests see the new one from then on. A root that cannot be
// watched (not there yet) is tried again every few seconds. Problems are logged when they
// change, never thrown; close() stops the watching.

import { watch, type FSWatcher } from 'node:fs';
import type { SkillRoot } from '../config/index.js';
import type { Logger } from '../log.js';
import { Catalog } from './catalog.js';
import { loadCatalog } from './load.js';

/** Changes this close together make one reload. */
const SETTLE_MS = 50;
/** How often a root that cannot be watched is tried again. */
const RETRY_MS = 5_000;

export class SkillFolder {
  private catalog = new Catalog([], []);
  private readonly watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private problems = '';

  constructor(
    private readonly roots: readonly SkillRoot[],
    private readonly log: Logger,
  ) {}

  /** The catalog as last loaded. */
  get current(): Catalog {
    return this.catalog;
  }

  /** Loads the folders once and starts watching them. */
  async start(): Promise<void> {
    for (const root of this.roots) this.watchRoot(root);
    await this.reload();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.watchers.splice(0)) w.close();
  }

  private watchRoot(root: SkillRoot): void {
    if (this.closed) return;
    try {
      const w = watch(root.dir, { recursive: true, persistent: false }, () => this.changed());
      w.on('error', (err) => {
        this.log.warn({ dir: root.dir, err: err.message }, 'skills folder watch failed; watching it again');
        w.close();
        this.watchers.splice(this.watchers.indexOf(w), 1);
        this.retry(root);
      });
      this.watchers.push(w);
    } catch (err) {
      this.log.warn(
        { dir: root.dir, err: (err as Error).message },
        'skills folder cannot be watched yet; trying again',
      );
      this.retry(root);
    }
  }

  private retry(root: SkillRoot): void {
    setTimeout(() => {
      if (this.closed) return;
      this.watchRoot(root);
      this.changed();
    }, RETRY_MS).unref();
  }

  private changed(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), SETTLE_MS);
    this.timer.unref();
  }

  /** One load at a time; changes during a load make one more after it. */
  private reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.again = false;
        try {
          this.catalog = await loadCatalog(this.roots);
        } catch (err) {
          this.log.warn({ err: (err as Error).message }, 'skills folder could not be loaded; the last catalog stays');
        }
      } while (this.again && !this.closed);
      this.loading = undefined;
      this.report();
    })();
    return this.loading;
  }

  private report(): void {
    const { problems, skills } = this.catalog;
    const said = problems.join('\n');
    if (said === this.problems) {
      this.log.debug({ skills: skills.size }, 'skills loaded');
      return;
    }
    this.problems = said;
    for (const p of problems) this.log.warn({ problem: p }, 'skill left out');
    this.log.info({ skills: skills.size, leftOut: problems.length }, 'skills loaded');
  }
}
