/**
 * The event bus: a worker publishes a turn's events, the process holding the
 * waiting request (the HTTP channel) receives them. Topics are cheap strings;
 * a subscriber sees every event published after subscribe() resolved.
 */
export interface Subscription {
  close(): void;
}

export interface Bus {
  publish(topic: string, event: unknown): Promise<void>;
  subscribe(topic: string, handler: (event: unknown) => void): Promise<Subscription>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
