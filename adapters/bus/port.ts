/**
 * The event bus: a worker publishes a turn's events, the process holding the
 * waiting request (the HTTP channel) receives them. Topics are cheap strings;
 * a subscriber sees every event published after subscribe() resolved, and
 * possibly a few from just before: consumers filter by the ids they wait for.
 */
export interface Subscription {
  close(): void;
}

export interface Bus {
  /** Publishes the events in order, in one write where the backend allows. */
  publish(topic: string, ...events: unknown[]): Promise<void>;
  subscribe(topic: string, handler: (event: unknown) => void): Promise<Subscription>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
