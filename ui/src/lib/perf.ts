// Figures the WebKit benchmark reads from the window (`window.__callsignPerf`).
export interface CallsignPerf {
  /** performance.now() when the first non-empty list frame was painted. */
  firstListPaintMs: number | null;
  /** How long the initial listing took, ms: every page (or the one list_tasks call), start to end. */
  listTasksMs: number | null;
  /** How long the first list_tasks_page call took (the 200 tasks painted first), ms. */
  pageMs: number | null;
  /** How many tasks the initial list held once every page was in. */
  initialCount: number | null;
  /** The last client-side filter pass, ms. */
  lastFilterMs: number | null;
}

declare global {
  interface Window {
    __callsignPerf?: CallsignPerf;
  }
}

export const perf: CallsignPerf = {
  firstListPaintMs: null,
  listTasksMs: null,
  pageMs: null,
  initialCount: null,
  lastFilterMs: null,
};

if (typeof window !== 'undefined') window.__callsignPerf = perf;

/** Records the first painted frame of a non-empty list: two animation frames after render. */
export function markFirstListPaint(): void {
  if (perf.firstListPaintMs !== null || typeof requestAnimationFrame === 'undefined') return;
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      if (perf.firstListPaintMs === null) perf.firstListPaintMs = performance.now();
    }),
  );
}
