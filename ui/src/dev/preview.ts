// The UI over the in-memory FakeBackend, for a plain browser (no Tauri). Query parameters:
// n (tasks to seed, default 40), provisional (of the newest, default 3), local (tasks in the
// local inbox), failed (tasks the server refused), server=none (local only, no default project),
// online=1, latency (ms before the fake server numbers a task), subtasks (how many of the newest
// pending tasks get three subtasks each), conflicts (how many of the newest numbered tasks carry a
// description another device's edit replaced), imported (how many of the newest numbered tasks
// came from Jira, with origin keys ENG-1, ENG-2, …).
import { mockIPC } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import { FakeBackend } from './fake-backend';

declare global {
  interface Window {
    __callsignFake?: FakeBackend;
  }
}

const q = new URLSearchParams(location.search);
const fake = new FakeBackend((event, payload) => void emit(event, payload));
const num = (name: string, d = 0) => Number(q.get(name) ?? d);
fake.seed(num('n', 40), num('provisional', 3), num('local'), num('failed'));
fake.seedSubtasks(num('subtasks'));
fake.seedConflicts(num('conflicts'));
fake.seedImported(num('imported'));
if (q.get('server') === 'none') {
  fake.settings.project = null;
} else {
  fake.settings.server_url = 'http://127.0.0.1:7171';
  fake.settings.token_set = true;
  fake.settings.token_hint = '…9f3a';
}
fake.online = q.get('online') === '1';
fake.lastError = fake.online || !fake.configured ? null : 'connection refused';
fake.latencyMs = Number(q.get('latency') ?? 400);
mockIPC((cmd, args) => fake.handle(cmd, (args ?? {}) as Record<string, unknown>), { shouldMockEvents: true });
window.__callsignFake = fake;
// Online from the start: the fake server numbers what the seed left provisional.
if (fake.online) fake.setOnline(true);

// The smoke run reports first paint both from navigation and from here (after the seeding).
performance.mark('callsign-app-start');
await import('../main');
