/**
 * An abort signal that aborts when any of its parents does, and lets go of
 * them when disposed.
 *
 * Why not AbortSignal.any: on Node 20 a signal made by AbortSignal.any that has
 * an 'abort' listener is kept in a process-wide set until it aborts, and the
 * openai SDK adds such a listener to every request's signal and never removes
 * it. One per model call and per turn stayed in memory forever (about 2 kB a
 * turn, measured with heap snapshots). A plain AbortController's signal is
 * collected with whatever holds it, and dispose() takes our listeners off the
 * parents, which may live long (a job's or the process's signal).
 */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
  /** Stops following the parents. Call it when the work the signal guards is over. */
  dispose(): void;
}

export function linkedSignal(...parents: Array<AbortSignal | undefined>): LinkedSignal {
  const controller = new AbortController();
  const followed: Array<[AbortSignal, () => void]> = [];
  const dispose = () => {
    for (const [parent, onAbort] of followed.splice(0)) parent.removeEventListener('abort', onAbort);
  };
  for (const parent of parents) {
    if (!parent) continue;
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const onAbort = () => {
      dispose();
      controller.abort(parent.reason);
    };
    parent.addEventListener('abort', onAbort, { once: true });
    followed.push([parent, onAbort]);
  }
  if (controller.signal.aborted) dispose();
  return { signal: controller.signal, abort: (reason) => controller.abort(reason), dispose };
}
