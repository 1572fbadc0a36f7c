/**
 * Worker heartbeats: each worker process beats every few seconds with a TTL; an ingress reads
 * who is alive (its /readyz, and a chat request that would otherwise wait for nobody).
 * Redis (shared by every process) or in process (the embedded default, one process).
 */
export interface WorkerBeat {
  /** The worker's id (`host:pid`), as turns record it. */
  id: string;
  pid: number;
  host: string;
  /** Epoch ms the worker started. */
  startedAt: number;
  /** Epoch ms of this beat (the writer's clock). */
  lastBeatAt: number;
  /** Turns running in the worker at this beat. */
  runningTurns: number;
}

export interface HeartbeatStore {
  /** Records a beat that counts for ttlMs. May throw (the store is unreachable): the writer beats again. */
  beat(beat: WorkerBeat, ttlMs: number): Promise<void>;
  /** A worker that stops cleanly is gone at once, not after its TTL. */
  remove(id: string): Promise<void>;
  /** The workers whose last beat is within its TTL. May throw (the store is unreachable). */
  alive(): Promise<WorkerBeat[]>;
  close(): Promise<void>;
}
