import type { HeartbeatStore, WorkerBeat } from './port.js';

/** Heartbeats in process: the embedded default, where the worker and the ingress share one process. */
export class MemoryHeartbeats implements HeartbeatStore {
  private readonly beats = new Map<string, { beat: WorkerBeat; until: number }>();

  async beat(beat: WorkerBeat, ttlMs: number): Promise<void> {
    this.beats.set(beat.id, { beat: { ...beat }, until: Date.now() + ttlMs });
  }

  async remove(id: string): Promise<void> {
    this.beats.delete(id);
  }

  async alive(): Promise<WorkerBeat[]> {
    const now = Date.now();
    for (const [id, b] of this.beats) if (b.until <= now) this.beats.delete(id);
    return [...this.beats.values()].map((b) => ({ ...b.beat }));
  }

  async close(): Promise<void> {}
}
