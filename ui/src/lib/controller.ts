// What the main window does when the user acts: choose a sidebar entry, open, move the cursor,
// capture, fix, copy, jump, create a project, and the rest the keys (keymap.ts) and the views
// call. It acts on `AppState` (the views follow it) and calls into the mounted components
// (`AppState.views`) for focus and scrolling.
import { tick } from 'svelte';
import { backend, toCmdError } from './backend';
import { copyText } from './clipboard';
import { cursorAt, cursorOn } from './cursor';
import type { AppData } from './data';
import type { KeyTarget, Layer, StandupKeys } from './keymap';
import { moveRefusal } from './moves';
import type { NoticeInput } from './notices';
import { capturePrefixes } from './projects';
import { captureAssignee, selectEntry, viewShowing, type EntryId, type ScopeEntryId } from './sidebar';
import type { AppState } from './state.svelte';
import type { CmdError, LocalTask, ViewStatus } from './types';
import { taskLabel } from './undo';
import { captureFields, EMPTY_CAPTURE, parseCapture } from './view';

/** Esc's layers besides the dialog: the state that says each is open. */
const LAYER_FLAGS = { sidebar: 'sidebarOpen', move: 'moveOpen', edit: 'editing', detail: 'detailOpen' } as const;

export class AppController implements KeyTarget {
  /** `N`: the view to go back to. */
  private beforeNext: ViewStatus = 'pending';

  constructor(
    readonly s: AppState,
    readonly data: AppData,
  ) {}

  get actions() {
    return this.data.actions;
  }

  notify(n: NoticeInput): void {
    this.s.notify(n);
  }

  async onCapture(text: string): Promise<boolean> {
    const s = this.s;
    // `#PFX` must name a known project; when none are known yet, any prefix goes.
    const parsed = parseCapture(text, capturePrefixes(s.projects), s.memberNames);
    if (parsed.description === '') {
      s.notify({ text: EMPTY_CAPTURE, tone: 'error', topic: 'capture' });
      return false;
    }
    // A due: or pri: the backend cannot read is refused: the text then comes back to the
    // capture bar, the refusal in the notice.
    // Captured in Assigned to me (and naming nobody): it is mine, and stays in view.
    const assignee = parsed.assignee ?? captureAssignee(s.activeScope, s.me);
    const t = await this.actions.capture({ ...captureFields(parsed), project: parsed.project ?? s.captureProject, ...(assignee ? { assignee } : {}) });
    if (t === null) return false;
    // In the standup, the capture shows there (as created, or open when assigned) on its own.
    if (s.mainView === 'standup') return true;
    await tick();
    const at = s.filtered.findIndex((x) => x.uuid === t.uuid);
    if (at >= 0) {
      s.cursor = { uuid: t.uuid, index: at, pinned: false };
      s.views.list?.reveal(at);
    } else {
      s.notify({ text: `Saved ${taskLabel(t)}; the filter hides it.`, tone: 'info' });
    }
    return true;
  }

  /** `r` and a row's Retry / Fix: send again as is, or open the task where it can be fixed. */
  async fix(t: LocalTask): Promise<void> {
    if (t.failure?.fix === 'retry') return this.actions.retry(t);
    if (t.failure === null && !t.local) {
      this.s.notify({ text: `${taskLabel(t)} has not failed: there is nothing to fix.`, tone: 'info' });
      return;
    }
    this.open(t);
    await tick();
    if (t.failure?.fix === 'fields') this.s.editing = true;
    else document.querySelector<HTMLElement>('[data-testid=detail-project]')?.focus();
  }

  async copyKey(t: LocalTask): Promise<void> {
    if (t.key === null) {
      const why = t.local ? 'it waits in this device’s inbox for a project' : 'it is provisional until the server numbers it';
      this.s.notify({ text: `${taskLabel(t)} has no key yet: ${why}.`, tone: 'info' });
      return;
    }
    try {
      await copyText(t.key);
      this.s.notify({ text: `Copied ${t.key}`, tone: 'info' });
    } catch (e) {
      this.s.fail(e, 'Copy failed');
    }
  }

  /** Copies the git branch name the task's key gives (`callsign branch` makes the same). */
  async copyBranch(t: LocalTask): Promise<void> {
    if (!t.branch) {
      const why = t.local ? 'it waits in this device’s inbox for a project' : 'it is provisional until the server numbers it';
      this.s.notify({ text: `${taskLabel(t)} has no branch name yet: a branch is named by its key, and ${why}.`, tone: 'info' });
      return;
    }
    try {
      await copyText(t.branch);
      this.s.notify({ text: `Copied ${t.branch}`, tone: 'info' });
    } catch (e) {
      this.s.fail(e, 'Copy failed');
    }
  }

  syncNow(): Promise<void> {
    return this.data.syncNow();
  }

  /** New project: created on the server, then listed, selected, and said. */
  async createProject(name: string, prefix: string, allowSimilar: boolean): Promise<CmdError | null> {
    const s = this.s;
    try {
      const p = await backend.createProject(name, prefix, allowSimilar);
      s.dialog = null;
      await this.data.refreshProjects();
      // (the list may not have it yet, or could not be read)
      if (!s.projects.some((x) => x.prefix.toUpperCase() === p.prefix.toUpperCase())) s.projects = [...s.projects, p];
      this.select(`project:${p.prefix.toUpperCase()}`);
      s.notify({ text: `Created ${p.prefix} — ${p.name}`, tone: 'info' });
      return null;
    } catch (e) {
      return toCmdError(e);
    }
  }

  /**
   * A sidebar entry: the list's scope (and status, for Failed), from its first row; Standup shows
   * its view in the list's place (the list keeps its scope for when it comes back).
   */
  async select(id: EntryId): Promise<void> {
    const s = this.s;
    s.sidebarOpen = false;
    if (id === 'standup') {
      s.mainView = 'standup';
      await tick();
      return this.focusMain();
    }
    s.mainView = 'list';
    ({ scope: s.scope, status: s.statusFilter } = selectEntry(id as ScopeEntryId, s.statusFilter));
    await tick();
    this.focusMain();
  }

  /** The focus back on what the main area shows: the list, or the standup's lines. */
  focusMain(): void {
    if (this.s.mainView === 'standup') this.s.views.standup?.focus();
    else this.s.views.list?.focus();
  }

  /** A standup line's task is current (the one keys act on, the one the detail shows). */
  standupSelect(uuid: string): void {
    this.s.cursor = { uuid, index: this.s.cursor.index, pinned: true };
  }

  /** A standup line opened: its task in the detail, beside the standup. */
  async standupOpen(uuid: string): Promise<void> {
    const t = this.data.store.find(uuid);
    if (t === undefined) {
      const r = await this.resolve(uuid, false);
      if ('error' in r) this.s.notify({ text: `Couldn't open the task: ${r.error}`, tone: 'error' });
      return;
    }
    this.standupSelect(uuid);
    this.s.detailOpen = true;
    this.s.editing = false;
  }

  /** `g p`: the focus in the sidebar (the drawer opens in a narrow window). */
  async focusSidebar(): Promise<void> {
    this.s.sidebarOpen = true;
    await tick();
    this.s.views.sidebar?.focus();
  }

  /**
   * A "task failed to sync" notification was clicked (`open-task`): the task opens in the
   * detail, its row in view; a scope, filter text or status that would hide it is cleared.
   */
  async openTask(uuid: string): Promise<void> {
    const s = this.s;
    s.mainView = 'list';
    const t = this.data.store.find(uuid);
    if (t !== undefined) {
      const view = viewShowing(t, { scope: s.activeScope, text: s.filterText, status: s.statusFilter }, s.filtered.some((x) => x.uuid === uuid), s.parsedFilter, s.me);
      s.scope = view.scope;
      s.filterText = view.text;
      s.statusFilter = view.status;
      await tick();
    }
    const r = await this.resolve(uuid);
    if ('error' in r) s.notify({ text: `Couldn't open the task: ${r.error}`, tone: 'error' });
  }

  /** A task by key or UUID, opened in the detail; `toList`: the list shown (a jump), its row in view. */
  async resolve(query: string, toList = true): Promise<{ task: LocalTask } | { error: string; notFound: boolean }> {
    const s = this.s;
    try {
      const t = await backend.resolveTask(query);
      if (toList) s.mainView = 'list';
      if (!this.data.store.has(t.uuid)) s.detailExtra = t;
      else this.data.upsert(t);
      if (s.mainView === 'standup') this.standupSelect(t.uuid);
      else s.cursor = cursorOn(s.filtered, t.uuid, s.cursor.index);
      s.detailOpen = true;
      s.editing = false;
      s.dialog = null;
      await tick();
      s.views.list?.reveal(s.cursor.pinned ? -1 : s.cursor.index);
      this.focusMain();
      return { task: t };
    } catch (e) {
      const err = toCmdError(e);
      return { error: err.message, notFound: err.code === 'not_found' };
    }
  }

  open(t: LocalTask): void {
    const s = this.s;
    if (s.mainView === 'standup') {
      this.standupSelect(t.uuid);
      s.detailOpen = true;
      return;
    }
    s.cursor = cursorOn(s.filtered, t.uuid, s.cursor.index);
    s.detailOpen = true;
    // Opened from the detail (a parent, a subtask): its row, when listed, comes into view.
    s.views.list?.reveal(s.cursor.pinned ? -1 : s.cursor.index);
  }

  /** `e`: the task open, its form editing. */
  edit(t: LocalTask): void {
    this.open(t);
    this.s.editing = true;
  }

  /** `m`: the detail's Move to… menu, or why this task cannot move alone (a subtask). */
  startMove(t: LocalTask): void {
    const parent = t.parent === null ? null : (this.s.tasks.find((x) => x.uuid === t.parent) ?? null);
    const refusal = moveRefusal(t, parent);
    if (refusal !== null) {
      this.s.notify({ text: refusal, tone: 'info' });
      return;
    }
    this.open(t);
    this.s.editing = false;
    this.s.moveOpen = true;
  }

  async moveTo(t: LocalTask, project: string): Promise<void> {
    this.focusMain();
    await this.actions.move(t, project);
  }

  /** The row `to` current (clamped), in view. */
  move(to: number): void {
    this.s.cursor = cursorAt(this.s.filtered, to);
    this.s.views.list?.reveal(this.s.cursor.index);
  }

  /** `N`: the Next view, and back to the view before it. */
  toggleNext(): void {
    const s = this.s;
    if (s.statusFilter === 'next') s.statusFilter = this.beforeNext;
    else {
      this.beforeNext = s.statusFilter;
      s.statusFilter = 'next';
    }
    this.focusMain();
  }

  showFailed(): void {
    this.s.filterText = '';
    this.select('failed');
  }

  closeDialog(): void {
    this.s.dialog = null;
    this.focusMain();
  }

  // ---- the rest of what the keys need (KeyTarget) ------------------------------------------

  get standup(): StandupKeys | null {
    return this.s.mainView === 'standup' ? (this.s.views.standup ?? null) : null;
  }

  // Every key applies to the current task: the highlighted row (or standup line), which the
  // detail shows. In the standup, a task is current only once a line is highlighted.
  current(): { task: LocalTask | null; index: number } {
    const s = this.s;
    const task = s.mainView !== 'standup' || s.currentTask?.uuid === s.views.standup?.current() ? s.currentTask : null;
    return { task, index: task !== null && !s.cur.pinned ? s.cur.index : -1 };
  }

  get rows(): number {
    return this.s.filtered.length;
  }

  focusCapture(): void {
    this.s.views.capture?.focus();
  }

  focusFilter(): void {
    this.s.views.filterBar?.focus();
  }

  openDialog(d: 'jump' | 'settings' | 'help'): void {
    this.s.dialog = d;
  }

  toggleTheme(): void {
    this.s.views.theme?.toggle();
  }

  hasEntry(id: EntryId): boolean {
    return this.s.entries.some((e) => e.id === id);
  }

  async showList(): Promise<void> {
    this.s.mainView = 'list';
    await tick();
  }

  isOpen(l: Layer): boolean {
    return l === 'dialog' ? this.s.dialog !== null : this.s[LAYER_FLAGS[l]];
  }

  close(l: Layer): void {
    if (l === 'dialog') this.s.dialog = null;
    else this.s[LAYER_FLAGS[l]] = false;
  }

  blur(): void {
    (document.activeElement as HTMLElement | null)?.blur();
  }

  clearNotice(): void {
    this.s.notice = null;
  }
}
