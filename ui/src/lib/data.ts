// The main window's data from the backend: the task list (pages, then events), the sync
// status, settings, projects, the team and the desktop preferences, written into `AppState`;
// and the commands that change them besides the tasks' own (TaskActions): sync, the inbox,
// settings, joining a team.
import { tick } from 'svelte';
import type { SaveRefusal } from '../components/SettingsDialog.svelte';
import { TaskActions } from './actions';
import { backend, inTauri, toCmdError } from './backend';
import { saveDensity, type Density } from './layout';
import { settleNotice } from './notices';
import { markFirstListPaint, perf } from './perf';
import type { AppState } from './state.svelte';
import { plural } from './status';
import { TaskStore } from './task-store';
import type { DesktopPrefs, ImportOptions, ImportProgress, ImportResult, JoinInput, LocalTask, SettingsInput, SyncStatus } from './types';
import { warmHaystacks } from './view';

const samePrefs = (a: DesktopPrefs, b: DesktopPrefs | null) =>
  b !== null &&
  a.close_to_tray === b.close_to_tray &&
  a.capture_shortcut === b.capture_shortcut &&
  a.notify_failures === b.notify_failures &&
  a.notify_keyed === b.notify_keyed;

export class AppData {
  readonly store: TaskStore;
  readonly actions: TaskActions;
  private loadedPages = 0;

  constructor(private s: AppState) {
    this.store = new TaskStore(
      { page: (offset, limit) => backend.listTasksPage(offset, limit), all: () => backend.listTasks({ status: 'all' }) },
      () => {
        s.tasks = this.store.list;
        s.total = this.store.total;
      },
      {
        onFirstPage: async (ms) => {
          perf.pageMs ??= ms;
          s.loaded = true;
          await tick();
          if (this.store.list.length > 0) markFirstListPaint();
        },
        onPage: (page) => void warmHaystacks(page),
        // The first page is painted (two frames, as perf.ts counts it) before the second is asked
        // for; later pages leave a task between them (input, rendering), not a whole frame.
        pause: () =>
          new Promise((r) =>
            this.loadedPages++ === 0 ? requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))) : setTimeout(r, 0),
          ),
      },
    );
    this.actions = new TaskActions({
      backend,
      upsert: (t) => this.upsert(t),
      remove: (uuid) => this.removed(uuid),
      find: (uuid) => this.store.find(uuid) ?? (s.detailExtra?.uuid === uuid ? s.detailExtra : undefined),
      notify: (n) => s.notify(n),
      settled: (topic) => (s.notice = settleNotice(s.notice, topic)),
    });
  }

  upsert(t: LocalTask): void {
    this.store.upsert(t);
    if (this.s.detailExtra?.uuid === t.uuid) this.s.detailExtra = t;
  }

  removed(uuid: string): void {
    this.store.remove(uuid);
    if (this.s.detailExtra?.uuid === uuid) this.s.detailExtra = null;
  }

  async loadList(): Promise<void> {
    const t0 = performance.now();
    this.loadedPages = 0;
    try {
      await this.store.load();
    } catch (e) {
      this.s.notify({ text: `Loading tasks failed: ${toCmdError(e).message}`, tone: 'error' });
    }
    perf.listTasksMs ??= performance.now() - t0;
    perf.initialCount ??= this.store.list.length;
    this.s.loaded = true;
  }

  /**
   * At mount: the clock, then the backend's events and everything it knows; `openTask` for a
   * clicked notification. Returns the function that stops it all.
   */
  start(openTask: (uuid: string) => void): () => void {
    const s = this.s;
    const timer = setInterval(() => (s.now = Date.now()), 1000);
    const unlisten: (() => void)[] = [];
    let stopped = false;
    if (!inTauri()) {
      s.notify({ text: 'Not running inside the Callsign app: there is no backend to talk to.', tone: 'error' });
      s.loaded = true;
      return () => clearInterval(timer);
    }
    (async () => {
      // Listen first, then load: events that arrive meanwhile are applied on top of the list.
      const subs = await Promise.all([
        backend.onTaskChanged((t) => this.upsert(t)),
        backend.onTaskRemoved((uuid) => this.removed(uuid)),
        backend.onSyncStatus((st) => this.onSyncStatus(st)),
        backend.onTasksReload(() => void this.loadList()),
        backend.onOpenTask(openTask),
      ]);
      if (stopped) subs.forEach((u) => u());
      else unlisten.push(...subs);
      await Promise.all([
        this.loadList(),
        backend.syncStatus().then((st) => (s.status ??= st), (e) => s.fail(e, 'Reading the sync status failed')),
        backend.getSettings().then((st) => (s.settings = st), (e) => s.fail(e, 'Reading settings failed')),
        this.refreshProjects(),
        // An older backend has no desktop preferences: Settings then leaves them out.
        backend.getDesktopPrefs().then((p) => (s.desktopPrefs = p), () => {}),
      ]);
    })();
    return () => {
      stopped = true;
      clearInterval(timer);
      unlisten.forEach((u) => u());
    };
  }

  /** The projects again, and the settings while there is no default project (a login sets it). */
  async refreshProjects(): Promise<void> {
    this.refreshMembers();
    try {
      const [list, st] = await Promise.all([
        backend.listProjects(),
        this.s.settings?.project ? null : backend.getSettings().catch(() => null),
      ]);
      this.s.projects = list;
      if (st !== null) this.s.settings = st;
    } catch {
      // Offline with no local tasks: the picker offers the default project and the inbox.
    } finally {
      this.s.projectsChecked = true;
    }
  }

  /** The team again (fresh when the server answers, else as last listed). */
  async refreshMembers(): Promise<void> {
    try {
      this.s.members = await backend.listMembers();
    } catch {
      // Kept as it was: `@name` goes on by the last list.
    }
  }

  onSyncStatus(st: SyncStatus): void {
    const s = this.s;
    const before = s.status;
    s.status = st;
    if (st.configured && st.online && before !== null && !before.online) this.refreshMembers();
    if (st.problem === null) s.notice = settleNotice(s.notice, 'sync');
    // A server was just set, or a sync went through while no default project is known.
    if (st.configured && before !== null && (!before.configured || (!s.settings?.project && st.last_sync_at !== before.last_sync_at))) {
      if (!before.configured) s.projectsChecked = false;
      this.refreshProjects();
    }
  }

  async syncNow(): Promise<void> {
    const s = this.s;
    if (!s.status?.configured) {
      s.notify({ text: 'Local only: set a server and token in Settings to sync.', tone: 'info' });
      return;
    }
    s.syncing = true;
    try {
      await backend.syncNow();
      s.notice = settleNotice(s.notice, 'sync');
      this.refreshProjects();
    } catch (e) {
      s.notify({ text: `Sync failed: ${toCmdError(e).message}`, tone: 'error', topic: 'sync' });
    } finally {
      s.syncing = false;
    }
  }

  async sendInbox(project: string): Promise<void> {
    const s = this.s;
    try {
      const n = await backend.sendInbox(project);
      s.status = await backend.syncStatus().catch(() => s.status);
      this.refreshProjects();
      s.notify({ text: `Sending ${plural(n, 'task')} to ${project}`, tone: 'info' });
    } catch (e) {
      s.fail(e, `Couldn't send the inbox to ${project}`);
    }
  }

  /**
   * Settings' Save: the desktop preferences first (a shortcut the system refuses keeps the dialog
   * open at its field, nothing else saved), then the settings.
   */
  async saveSettings(input: SettingsInput, rows: Density, prefs: DesktopPrefs | null): Promise<SaveRefusal | null> {
    const s = this.s;
    s.density = rows;
    saveDensity(rows);
    if (prefs !== null && !samePrefs(prefs, s.desktopPrefs)) {
      try {
        s.desktopPrefs = await backend.saveDesktopPrefs(prefs);
      } catch (e) {
        const err = toCmdError(e);
        return err.code === 'invalid' ? { shortcut: err.message } : { settings: `Desktop preferences not saved: ${err.message}` };
      }
    }
    try {
      s.settings = await backend.saveSettings(input);
      s.projectsChecked = false;
      await this.refreshProjects();
      s.status = await backend.syncStatus().catch(() => s.status);
      s.notify({ text: 'Settings saved', tone: 'info' });
      return null;
    } catch (e) {
      return { settings: toCmdError(e).message };
    }
  }

  /**
   * Settings → Import: plans (`dry_run`) or queues an export; a real one may have made projects,
   * so they are read again. Rejects with `{code, message}`.
   */
  async importExport(bytes: Uint8Array, options: ImportOptions): Promise<ImportResult> {
    const r = await backend.importExport(bytes, options);
    if (!options.dry_run) {
      await this.refreshProjects();
      this.s.status = await backend.syncStatus().catch(() => this.s.status);
    }
    return r;
  }

  /** How an import's tasks stand now (`import_progress`). */
  importProgress(uuids: string[]): Promise<ImportProgress> {
    return backend.importProgress(uuids);
  }

  /** "Join a team": the settings as joined, the projects and status again; why not, or null. */
  async joinTeam(input: JoinInput): Promise<string | null> {
    const s = this.s;
    try {
      s.settings = await backend.joinTeam(input);
      s.projectsChecked = false;
      await this.refreshProjects();
      s.status = await backend.syncStatus().catch(() => s.status);
      // (as the projects' refresh may have read them again)
      const member = s.settings?.member;
      if (member) s.notify({ text: `Joined as @${member.name}`, tone: 'info' });
      return null;
    } catch (e) {
      return toCmdError(e).message;
    }
  }
}
