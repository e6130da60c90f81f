// The loaded list: every task, newest first, loaded in pages and kept current by events.
// No Tauri and no DOM: tested against the fake backend in tests/task-store.test.ts.
//
// Loading: a first page of 200 (painted at once), then the rest in pages of 5,000 appended in
// order. Events are applied as they come, so while pages load a change can name a task that is
// not loaded yet. A task newer than the top of the list is new: it goes on top at once. Any
// other unknown task is held until its page brings it (the event's copy then takes the page's
// place, since it is the newer) or, once every page is in, goes on top. Removed tasks are
// remembered for the session: no page or late answer brings them back. A removal of a loaded task
// moves the backend's offsets back by one, so the next page asks one row earlier (nothing is
// skipped; an insertion on top only makes a page repeat a task, which is dropped). Not covered:
// a removal the backend applies while a page request is in flight can shift that page by one,
// hiding one older task until the next load.
import type { LocalTask, TaskPage } from './types';
import { applyTaskEvent, createdMs, isStale } from './view';

export interface PageSource {
  page(offset: number, limit: number): Promise<TaskPage>;
  /** The whole list in one call: used when `page` is not available. */
  all(): Promise<LocalTask[]>;
}

export interface StoreOptions {
  first?: number;
  size?: number;
  /** After the first page (or the whole list, in the fallback) is in the list, with its call's time. */
  onFirstPage?: (ms: number) => void;
  /** Each batch of tasks added by a page. */
  onPage?: (tasks: LocalTask[]) => void;
  /**
   * Awaited before each page after the first, so the first page paints and input is handled
   * while the rest loads (an answer can arrive as a microtask). Default: a macrotask.
   */
  pause?: () => Promise<void>;
}

export class TaskStore {
  /** Replaced, never mutated (the UI keeps it as raw state). */
  list: LocalTask[] = [];
  /** The backend's count while pages are loading; null when the whole list is in. */
  total: number | null = null;
  private inList = new Set<string>();
  private early = new Map<string, LocalTask>();
  private removed = new Set<string>();
  private paged = new Set<string>();
  private shift = 0;
  private gen = 0;
  /** Until the first load is done, events are held as above (there is no list to place them in). */
  private loading = true;
  private readonly first: number;
  private readonly size: number;

  constructor(
    private src: PageSource,
    private onChange: () => void,
    private opts: StoreOptions = {},
  ) {
    this.first = opts.first ?? 200;
    this.size = opts.size ?? 5000;
  }

  has(uuid: string): boolean {
    return this.inList.has(uuid);
  }

  find(uuid: string): LocalTask | undefined {
    return this.inList.has(uuid) ? this.list.find((t) => t.uuid === uuid) : undefined;
  }

  /** A task as an event or a command's answer gives it. */
  upsert(t: LocalTask): void {
    if (this.removed.has(t.uuid)) return;
    if (!this.inList.has(t.uuid)) {
      const top = this.list[0];
      if (this.loading && (top === undefined || createdMs(t) < createdMs(top))) {
        const held = this.early.get(t.uuid);
        if (held === undefined || !isStale(held, t)) this.early.set(t.uuid, t);
        return;
      }
      this.inList.add(t.uuid);
      this.list = [t, ...this.list];
      this.onChange();
      return;
    }
    const next = applyTaskEvent(this.list, t);
    if (next !== this.list) {
      this.list = next;
      this.onChange();
    }
  }

  /** The task left this device (`task-removed`); idempotent. */
  remove(uuid: string): void {
    this.removed.add(uuid);
    this.early.delete(uuid);
    if (!this.inList.has(uuid)) return;
    if (this.loading && this.paged.has(uuid)) this.shift++;
    this.inList.delete(uuid);
    this.list = this.list.filter((t) => t.uuid !== uuid);
    this.onChange();
  }

  /** Loads the list (again, for `tasks-reload`); a newer load supersedes this one. */
  async load(): Promise<void> {
    const gen = ++this.gen;
    this.loading = true;
    const t0 = performance.now();
    let first: TaskPage;
    try {
      first = await this.src.page(0, this.first);
    } catch {
      // An older backend without pages: the whole list in one call.
      const all = await this.src.all().finally(() => {
        if (gen === this.gen) this.loading = false;
      });
      if (gen !== this.gen) return;
      this.replace(all);
      this.finish();
      this.opts.onFirstPage?.(performance.now() - t0);
      return;
    }
    if (gen !== this.gen) return;
    this.replace(first.tasks);
    this.total = first.total;
    this.onChange();
    this.opts.onFirstPage?.(performance.now() - t0);
    try {
      let offset = first.tasks.length;
      let total = first.total;
      const pause = this.opts.pause ?? (() => new Promise<void>((r) => setTimeout(r, 0)));
      while (offset < total) {
        await pause();
        if (gen !== this.gen) return;
        offset -= this.shift;
        this.shift = 0;
        const p = await this.src.page(offset, this.size);
        if (gen !== this.gen) return;
        this.append(p.tasks);
        offset += p.tasks.length;
        total = this.total = p.total;
        if (p.tasks.length === 0) break;
        this.onChange();
      }
    } finally {
      if (gen === this.gen) this.finish();
    }
  }

  private take(t: LocalTask): LocalTask {
    const held = this.early.get(t.uuid);
    if (held === undefined) return t;
    this.early.delete(t.uuid);
    return isStale(t, held) ? t : held;
  }

  private replace(tasks: LocalTask[]): void {
    this.shift = 0;
    const list = tasks.filter((t) => !this.removed.has(t.uuid)).map((t) => this.take(t));
    this.list = list;
    this.inList = new Set(list.map((t) => t.uuid));
    this.paged = new Set(this.inList);
    // Held events newer than the top are new tasks: on top now.
    const top = list[0];
    for (const t of [...this.early.values()].sort((a, b) => createdMs(a) - createdMs(b))) {
      if (top === undefined || createdMs(t) >= createdMs(top)) {
        this.early.delete(t.uuid);
        this.inList.add(t.uuid);
        this.list = [t, ...this.list];
      }
    }
    this.opts.onPage?.(this.list);
  }

  private append(tasks: LocalTask[]): void {
    const fresh: LocalTask[] = [];
    for (const t of tasks) {
      if (this.inList.has(t.uuid) || this.removed.has(t.uuid)) continue;
      const u = this.take(t);
      this.inList.add(u.uuid);
      this.paged.add(u.uuid);
      fresh.push(u);
    }
    if (fresh.length === 0) return;
    this.list = this.list.concat(fresh);
    this.opts.onPage?.(fresh);
  }

  private finish(): void {
    this.loading = false;
    this.total = null;
    for (const t of [...this.early.values()].sort((a, b) => createdMs(a) - createdMs(b))) {
      if (this.inList.has(t.uuid)) continue;
      this.inList.add(t.uuid);
      this.list = [t, ...this.list];
    }
    this.early.clear();
    this.paged.clear();
    this.onChange();
  }
}
