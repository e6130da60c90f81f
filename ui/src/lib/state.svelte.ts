// The main window's state, shared by its views: what the backend said (the tasks, the sync
// status, settings, projects, team), what the user chose (scope, filter, status, order, the
// current task, what is open), and what follows from them (the list as shown, the current and
// detail tasks). One `AppState` per window, made by App.svelte; `track()` starts the effects
// that keep it consistent. data.ts fills it from the backend, controller.ts acts on it.
import { untrack } from 'svelte';
import { backend, toCmdError } from './backend';
import { cursorAt, NO_CURSOR, reconcileCursor, type Cursor } from './cursor';
import { keyColumnCh, loadDensity, type Density } from './layout';
import { expireNotice, noticeMsLeft, showNotice, type Notice, type NoticeInput } from './notices';
import { nextTasks } from './next';
import { perf } from './perf';
import { examplePrefix, INBOX, pickerProjects, serverProjects } from './projects';
import { ALL, captureTarget, scopeTasks, selectedEntry, sidebarCounts, sidebarEntries, type EntryId, type Scope } from './sidebar';
import { loadSort, saveSort, sortTasks, type SortOrder } from './sort';
import { Subtasks } from './subtasks';
import type { DesktopPrefs, Filter, LocalTask, Members, Project, Settings, SyncStatus, ViewStatus } from './types';
import { createFilter, EMPTY_FILTER } from './view';
import type CaptureBar from '../components/CaptureBar.svelte';
import type FilterBar from '../components/FilterBar.svelte';
import type ListView from '../components/ListView.svelte';
import type Sidebar from '../components/Sidebar.svelte';
import type StandupView from '../components/StandupView.svelte';
import type ThemeToggle from '../components/ThemeToggle.svelte';

export type MainView = 'list' | 'standup';
export type Dialog = 'jump' | 'settings' | 'help' | 'new-project';

/** The components the app calls into (focus, scroll, the standup's lines), bound as they mount. */
export interface Views {
  capture?: CaptureBar;
  filterBar?: FilterBar;
  list?: ListView;
  sidebar?: Sidebar;
  standup?: StandupView;
  theme?: ThemeToggle;
}

export class AppState {
  // ---- what the backend said ----------------------------------------------------------------

  // All tasks (every status), newest first; filtered on the client. Raw state: the array is
  // replaced, never mutated, so 50,000 tasks are not wrapped in proxies.
  tasks = $state.raw<LocalTask[]>([]);
  /** The backend's count while pages load, else null. */
  total = $state<number | null>(null);
  loaded = $state(false);
  status = $state.raw<SyncStatus | null>(null);
  settings = $state.raw<Settings | null>(null);
  projects = $state.raw<Project[]>([]);
  /** The team (`list_members`); null until asked. */
  members = $state.raw<Members | null>(null);
  /** This device's desktop preferences; null until read (or when the backend has none). */
  desktopPrefs = $state.raw<DesktopPrefs | null>(null);
  /** False from the moment a server is set until its projects were asked for (the banner waits). */
  projectsChecked = $state(false);

  // ---- what the user chose, and what is open ------------------------------------------------

  captureProject = $state(INBOX);
  filterText = $state('');
  statusFilter = $state<ViewStatus>('pending');
  /** The sidebar's scope (a project, the inbox), besides the filter text and the status. */
  scope = $state.raw<Scope>(ALL);
  /** What the main area shows: the list, or the Standup view in its place (the sidebar's Standup). */
  mainView = $state<MainView>('list');
  /** The sidebar drawer is open (narrow windows; wide, the sidebar is always there). */
  sidebarOpen = $state(false);
  sortOrder = $state<SortOrder>(loadSort());
  /** The current task: the highlighted row, and what the detail shows when it is open. */
  cursor = $state.raw<Cursor>(NO_CURSOR);
  detailOpen = $state(false);
  /** A resolved task that is not in the loaded list (kept so the detail can show it). */
  detailExtra = $state.raw<LocalTask | null>(null);
  editing = $state(false);
  /** The detail's Move to… menu is open. */
  moveOpen = $state(false);
  dialog = $state<Dialog | null>(null);
  syncing = $state(false);
  now = $state(Date.now());
  notice = $state.raw<Notice | null>(null);
  density = $state<Density>(loadDensity());

  // The filter text as callsign-core reads it (the CLI's grammar): parsed by the backend as the
  // text changes (`track`); the last answer for the newest text wins. A text it refuses keeps
  // the last good filter and shows why under the bar.
  parsedFilter = $state<Filter>(EMPTY_FILTER);
  filterError = $state<string | null>(null);

  readonly views: Views = {};

  // ---- what follows -------------------------------------------------------------------------

  readonly servers = $derived(serverProjects(this.projects));
  readonly picker = $derived(pickerProjects(this.projects, this.settings?.project));
  readonly prefix = $derived(examplePrefix(this.settings?.project, this.projects));
  readonly keyCh = $derived(keyColumnCh(this.tasks));
  /** This device's member (who "Assigned to me" is), when known. */
  readonly me = $derived(this.settings?.member?.name ?? null);
  /** The handles `@name` may assign to; null while no team was ever listed (any handle goes). */
  readonly memberNames = $derived(this.members?.known ? this.members.members.map((m) => m.name) : null);
  readonly defaultProject = $derived(this.settings?.project ?? null);

  // Who is whose subtask, from the loaded list (subtasks.ts: a parent's own counts go stale).
  readonly subtasks = $derived(new Subtasks(this.tasks, this.loaded && this.total === null));

  // Sorted before filtering: the order changes only with the tasks or the choice, so a keystroke
  // in the filter pays for the filter alone (and `createFilter` can narrow, the list being the
  // same array); the filter keeps the order. `created` is `tasks` itself. Next has its own
  // order (leaf-first, as `callsign next`) and leaves out blocked tasks.
  readonly ordered = $derived(this.statusFilter === 'next' ? nextTasks(this.tasks, this.subtasks) : sortTasks(this.tasks, this.sortOrder));

  // The sidebar: counts from the loaded list (one pass), its entries, and the scope, which holds
  // while its entry is there (a project the server no longer lists, an emptied inbox: All).
  readonly configured = $derived(this.status?.configured ?? this.servers.length > 0);
  readonly entries = $derived(sidebarEntries(this.projects, sidebarCounts(this.tasks, this.me), this.configured));
  readonly activeScope = $derived(
    this.scope.kind === 'all' || this.entries.some((e) => e.id === selectedEntry(this.scope, 'pending')) ? this.scope : ALL,
  );
  readonly selected = $derived<EntryId>(this.mainView === 'standup' ? 'standup' : selectedEntry(this.activeScope, this.statusFilter));
  /** The ordered list within the scope (the same array while neither changes: the filter narrows it). */
  readonly scoped = $derived(scopeTasks(this.ordered, this.activeScope, this.me));

  private filterFn = createFilter();
  /** The list as shown: the filter's answer, in the chosen order. */
  readonly filtered = $derived.by(() => {
    const list = this.scoped; // sorted and scoped (when they must be) before the clock starts
    const t0 = performance.now();
    const out = this.filterFn(list, { filter: this.parsedFilter, status: this.statusFilter });
    perf.lastFilterMs = performance.now() - t0;
    return out;
  });

  private exists = (uuid: string) => this.detailExtra?.uuid === uuid || this.tasks.some((t) => t.uuid === uuid);
  // The cursor as the list now stands (see reconcileCursor); written back by an effect (`track`).
  // In the standup the list is not shown: its line's task is current (pinned) while it exists.
  readonly cur = $derived(reconcileCursor(this.cursor, this.mainView === 'standup' ? [] : this.filtered, this.exists));
  readonly currentTask = $derived.by((): LocalTask | null => {
    const cur = this.cur;
    if (cur.uuid === null) return null;
    const row = this.filtered[cur.index];
    if (row?.uuid === cur.uuid) return row;
    return this.tasks.find((t) => t.uuid === cur.uuid) ?? (this.detailExtra?.uuid === cur.uuid ? this.detailExtra : null);
  });
  readonly detailTask = $derived(this.detailOpen ? this.currentTask : null);
  readonly detailParent = $derived.by((): LocalTask | null => {
    const up = this.detailTask?.parent ?? null;
    if (up === null) return null;
    return this.tasks.find((t) => t.uuid === up) ?? null;
  });

  notify(n: NoticeInput): void {
    this.notice = showNotice(n, Date.now());
  }

  fail(e: unknown, what: string): void {
    this.notify({ text: `${what}: ${toCmdError(e).message}`, tone: 'error' });
  }

  /** The effects that keep the state consistent: once, while the App component is set up. */
  track(): void {
    let filterSeq = 0;
    $effect(() => {
      const text = this.filterText;
      const seq = ++filterSeq;
      if (text.trim() === '') {
        this.parsedFilter = EMPTY_FILTER;
        this.filterError = null;
        return;
      }
      backend.parseFilter(text).then(
        (f) => {
          if (seq !== filterSeq) return;
          this.parsedFilter = f;
          this.filterError = null;
        },
        (e: unknown) => {
          if (seq === filterSeq) this.filterError = toCmdError(e).message;
        },
      );
    });
    $effect(() => {
      const cur = this.cur;
      if (cur !== this.cursor) this.cursor = cur;
      if (cur.uuid === null && this.detailOpen && this.loaded) this.detailOpen = false;
    });
    // An edit belongs to its task: another task becoming current ends it.
    let editedUuid: string | null = null;
    $effect(() => {
      const uuid = this.cur.uuid;
      if (uuid !== editedUuid) {
        untrack(() => {
          this.editing = false;
          this.moveOpen = false;
        });
      }
      editedUuid = uuid;
    });
    // A new filter or order starts at the top, on its first row.
    let lastFilter: string | null = null;
    $effect(() => {
      const key = `${this.statusFilter}\n${this.sortOrder}\n${this.filterText}\n${selectedEntry(this.activeScope, 'pending')}`;
      untrack(() => {
        if (lastFilter !== null && key !== lastFilter) {
          this.views.list?.toTop();
          this.cursor = cursorAt(this.filtered, 0);
        }
        lastFilter = key;
      });
    });
    // Info notices expire; errors stay (see notices.ts).
    $effect(() => {
      const ms = noticeMsLeft(this.notice, Date.now());
      if (ms === null) return;
      const timer = setTimeout(() => (this.notice = expireNotice(this.notice, Date.now())), ms + 10);
      return () => clearTimeout(timer);
    });
    // The picker starts on the default project (else the inbox) and follows it, and the
    // sidebar's scope, when either changes (sidebar.ts: captureTarget).
    $effect(() => {
      this.captureProject = captureTarget(this.activeScope, this.defaultProject);
    });
    $effect(() => saveSort(this.sortOrder));
  }
}
