// An in-memory stand-in for src-tauri, for the browser preview (`npm run build:preview`) and the
// WebKit smoke test. Not part of the production bundle. It follows the command contract: same
// names, same argument shapes, `{code, message}` rejections, `task-changed` / `sync-status`
// events. A fake "server" numbers provisional tasks when online.
import type {
  CmdError,
  CreateInput,
  ListFilter,
  LocalTask,
  Project,
  Settings,
  SettingsInput,
  SyncStatus,
  TaskPatch,
} from '../lib/types';
import { filterTasks, parseJumpQuery } from '../lib/view';

type Emit = (event: string, payload: unknown) => void;

function err(code: string, message: string): CmdError {
  return { code, message };
}

function uuid4(n: number): string {
  const head = ((Math.random() * 0x100000000) >>> 0).toString(16).padStart(8, '0');
  return `${head}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

export class FakeBackend {
  private tasks: LocalTask[] = []; // oldest first
  private byUuid = new Map<string, LocalTask>();
  private next = new Map<string, number>();
  private seq = 0;
  online = false;
  settings: Settings = { server_url: null, device_name: 'preview', token_set: false, token_hint: null, project: 'SYN' };
  projects: Project[] = [
    { prefix: 'SYN', name: 'Syncing' },
    { prefix: 'OPS', name: 'Operations' },
  ];
  lastError: string | null = null;
  /** Delay before the fake server numbers a task, ms. */
  latencyMs = 400;

  constructor(private emit: Emit) {}

  get configured(): boolean {
    return this.settings.server_url !== null && this.settings.token_set;
  }

  /** Fills the store with `n` tasks; the first `provisional` of the newest have no key. */
  seed(n: number, provisional = 0): void {
    const start = Date.now() - n * 60_000;
    const words = ['Fix', 'Write', 'Review', 'Deploy', 'Plan', 'Rotate', 'Update', 'Check'];
    const things = ['login page', 'release notes', 'sync engine', 'backups', 'keys', 'docs', 'CI', 'metrics'];
    for (let i = 0; i < n; i++) {
      const project = i % 4 === 0 ? 'OPS' : 'SYN';
      const t = this.make({
        description: `${words[i % words.length]} ${things[(i * 7) % things.length]} ${i + 1}`,
        project,
        tags: i % 5 === 0 ? ['ops'] : [],
      }, new Date(start + i * 60_000).toISOString());
      if (i < n - provisional) this.number(t, false);
      if (i % 11 === 0) t.status = 'completed';
    }
  }

  private make(input: CreateInput, at = new Date().toISOString()): LocalTask {
    const t: LocalTask = {
      uuid: uuid4(this.seq++),
      key: null,
      project: (input.project ?? this.settings.project ?? 'SYN').toUpperCase(),
      number: null,
      description: input.description,
      notes: input.notes ?? '',
      status: 'pending',
      tags: input.tags ?? [],
      created_at: at,
      modified_at: at,
      sync_state: 'provisional',
      last_error: null,
      waiting: { state: 'pending', next_attempt_at: null },
    };
    this.tasks.push(t);
    this.byUuid.set(t.uuid, t);
    return t;
  }

  private number(t: LocalTask, emit = true): void {
    if (t.key !== null) return;
    const n = (this.next.get(t.project) ?? 0) + 1;
    this.next.set(t.project, n);
    t.number = n;
    t.key = `${t.project}-${n}`;
    t.sync_state = 'synced';
    t.waiting = null;
    if (emit) this.changed(t);
  }

  private changed(t: LocalTask): void {
    this.emit('task-changed', { ...t, tags: [...t.tags] });
  }

  status(): SyncStatus {
    const waiting = this.tasks.filter((t) => t.waiting !== null);
    return {
      configured: this.configured,
      online: this.configured && this.online,
      pending: waiting.filter((t) => t.waiting?.state !== 'failed').length,
      failed: waiting.filter((t) => t.waiting?.state === 'failed').length,
      in_flight: 0,
      next_attempt_at: null,
      last_error: this.lastError,
      last_sync_at: this.online ? new Date().toISOString() : null,
      server_url: this.settings.server_url,
    };
  }

  private statusChanged(): void {
    this.emit('sync-status', this.status());
  }

  /** The fake server numbers what waits, oldest first, one by one. */
  private pump(): void {
    if (!this.configured || !this.online) return;
    const waiting = this.tasks.filter((t) => t.key === null && t.waiting?.state === 'pending');
    waiting.forEach((t, i) =>
      setTimeout(() => {
        if (!this.online) return;
        this.number(t);
        this.statusChanged();
      }, this.latencyMs + i * 150),
    );
  }

  setOnline(online: boolean): void {
    this.online = online;
    this.lastError = online ? null : 'connection refused';
    this.statusChanged();
    this.pump();
  }

  /** A task added by "another program" on the same data dir. */
  addExternal(description: string): LocalTask {
    const t = this.make({ description });
    this.changed(t);
    this.statusChanged();
    this.pump();
    return t;
  }

  /** The server refuses this task's create. */
  refuse(id: string, message: string): void {
    const t = this.get(id);
    t.sync_state = 'failed';
    t.last_error = message;
    t.waiting = { state: 'failed', next_attempt_at: null };
    this.changed(t);
    this.statusChanged();
  }

  private get(id: string): LocalTask {
    const t = this.byUuid.get(id);
    if (!t) throw err('not_found', `No task ${id}`);
    return t;
  }

  private touch(t: LocalTask): LocalTask {
    t.modified_at = new Date().toISOString();
    this.changed(t);
    return { ...t };
  }

  handle(cmd: string, args: Record<string, unknown>): unknown {
    switch (cmd) {
      case 'list_tasks': {
        const f = (args.filter ?? {}) as ListFilter;
        return filterTasks(this.tasks.slice().reverse(), f).map((t) => ({ ...t }));
      }
      case 'create_task': {
        const input = args.input as CreateInput;
        if (!input.description.trim()) throw err('invalid', 'the description is empty');
        const t = this.make(input);
        this.statusChanged();
        this.pump();
        return { ...t };
      }
      case 'edit_task': {
        const t = this.get(args.id as string);
        const p = args.patch as TaskPatch;
        if (p.description !== undefined) t.description = p.description;
        if (p.notes !== undefined) t.notes = p.notes;
        if (p.tags !== undefined) t.tags = p.tags;
        return this.touch(t);
      }
      case 'complete_task': {
        const t = this.get(args.id as string);
        t.status = 'completed';
        return this.touch(t);
      }
      case 'reopen_task': {
        const t = this.get(args.id as string);
        t.status = 'pending';
        return this.touch(t);
      }
      case 'delete_task': {
        const t = this.get(args.id as string);
        t.status = 'deleted';
        return this.touch(t);
      }
      case 'retry_task': {
        const t = this.get(args.id as string);
        t.sync_state = t.key ? 'synced' : 'provisional';
        t.last_error = null;
        t.waiting = { state: 'pending', next_attempt_at: null };
        this.pump();
        return this.touch(t);
      }
      case 'resolve_task': {
        const query = args.query as string;
        const q = parseJumpQuery(query);
        let found: LocalTask | undefined;
        if (q.kind === 'key') found = this.tasks.find((t) => t.key === q.key);
        if (q.kind === 'uuid') found = this.byUuid.get(q.uuid);
        const hex = query.trim().replace(/^~/, '').replace(/-/g, '').toLowerCase();
        if (!found && /^[0-9a-f]{8,}$/.test(hex)) {
          const hits = this.tasks.filter((t) => t.uuid.replace(/-/g, '').startsWith(hex));
          if (hits.length > 1) throw err('ambiguous', `${query} matches more than one task`);
          found = hits[0];
        }
        if (!found) throw err('not_found', `No task ${q.kind === 'key' ? q.key : query.trim()}`);
        return { ...found };
      }
      case 'get_settings':
        return { ...this.settings };
      case 'save_settings': {
        const s = args.settings as SettingsInput;
        if (s.server_url !== undefined) {
          if (s.server_url !== null && !/^https?:\/\/\S+$/.test(s.server_url)) {
            throw err('invalid', `"${s.server_url}" is not a server URL: use http://host:port or https://host`);
          }
          this.settings.server_url = s.server_url;
        }
        if (s.device_name !== undefined) this.settings.device_name = s.device_name;
        if (s.project !== undefined) {
          if (!/^[A-Za-z][A-Za-z0-9]{1,9}$/.test(s.project)) throw err('invalid', `"${s.project}" is not a project prefix`);
          this.settings.project = s.project.toUpperCase();
        }
        if (s.token !== undefined) {
          this.settings.token_set = true;
          this.settings.token_hint = `…${s.token.slice(-4)}`;
        }
        this.statusChanged();
        this.pump();
        return { ...this.settings };
      }
      case 'sync_now':
        if (!this.configured) throw err('not_logged_in', 'no server configured');
        if (!this.online) throw err('unreachable', `cannot reach ${this.settings.server_url}: connection refused`);
        this.pump();
        return null;
      case 'sync_status':
        return this.status();
      case 'list_projects':
        return this.projects;
      default:
        throw err('unknown', `unknown command ${cmd}`);
    }
  }
}
