// Deadlines that all run the same time (a lane's calls, each the upstream's request timeout),
// kept in one list with one timer, instead of a Node timer (a Timeout object, and its insertion in
// the timer lists) per request. Each due thing is its own list entry (its links are its fields):
// adding and removing allocate nothing. Added in order, all with the same wait, the list is in
// the order they fall due; the timer is set for the first, and set again for the next once it
// fires. Links are cleared as an entry leaves, so one gone holds nothing (see in-flight.ts).

/** What a Deadlines list holds: its deadline() is called when due, unless removed before. */
export interface Due {
  /** Kept by the list: when it falls due (performance.now() time), undefined when not listed; its neighbours. */
  dueAt: number | undefined;
  dueBefore: Due | undefined;
  dueAfter: Due | undefined;
  deadline(): void;
}

export class Deadlines {
  private first: Due | undefined = undefined;
  private last: Due | undefined = undefined;
  private timer: NodeJS.Timeout | undefined = undefined;
  /** The timer keeps the process running only while something is due. */
  private held = false;

  /** `ms`: how long after add() each entry falls due. */
  constructor(readonly ms: number) {}

  add(d: Due): void {
    d.dueAt = performance.now() + this.ms;
    d.dueBefore = this.last;
    d.dueAfter = undefined;
    if (this.last === undefined) this.first = d;
    else this.last.dueAfter = d;
    this.last = d;
    if (this.timer === undefined) this.timer = setTimeout(fire, this.ms, this);
    else if (!this.held) this.timer.ref();
    this.held = true;
  }

  /** Takes `d` out (its deadline() is not called); nothing when it is not listed. */
  remove(d: Due): void {
    if (d.dueAt === undefined) return;
    const { dueBefore, dueAfter } = d;
    if (dueBefore === undefined) this.first = dueAfter;
    else dueBefore.dueAfter = dueAfter;
    if (dueAfter === undefined) this.last = dueBefore;
    else dueAfter.dueBefore = dueBefore;
    d.dueAt = d.dueBefore = d.dueAfter = undefined;
    if (this.first === undefined && this.timer !== undefined) {
      this.timer.unref();
      this.held = false;
    }
  }

  /** The timer fired: every entry due is taken out and told, and the timer set for the next. */
  expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (let d = this.first; d !== undefined && d.dueAt! <= now; d = this.first) {
      this.remove(d);
      d.deadline();
    }
    const next = this.first;
    if (next === undefined) this.held = false;
    // (A deadline() that added an entry set a timer already.)
    else if (this.timer === undefined) this.timer = setTimeout(fire, Math.max(1, next.dueAt! - now), this);
  }
}

/** The list's timer, as Node calls it (no closure per list). */
function fire(list: Deadlines): void {
  list.expire();
}
