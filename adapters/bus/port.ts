/**
 * The event bus: a worker publishes a turn's events, the process holding the
 * waiting request (the HTTP channel) receives them. Topics are cheap strings;
 * a subscriber sees every event published after subscribe() resolved, and
 * possibly a few from just before: consumers filter by the ids they wait for.
 * Events cross the bus as JSON: a subscriber gets a copy, never the object published.
 * A topic keeps its recent events for a while (the Redis stream's entries, capped and expiring
 * when idle; a small buffer in memory), which history() reads back: a consumer that joins late
 * or missed some catches up from there.
 */
export interface Subscription {
  close(): void;
}

declare const payload: unique symbol;

/**
 * A topic name that carries the type of its events: publish() takes only that
 * type and subscribe() hands it to the handler. It is a string at run time
 * (the same wire names as before); make one with topic<T>(name).
 */
export type Topic<T> = string & { readonly [payload]: (event: T) => void };

export function topic<T>(name: string): Topic<T> {
  return name as Topic<T>;
}

/** A plain string topic, for callers not yet on typed topics; a typed topic never matches it, so its payload type cannot be bypassed. */
type Untyped<S extends string> = S extends { readonly [payload]: unknown } ? never : S;

export interface Bus {
  /** Publishes the events in order, in one write where the backend allows. */
  publish<T>(topic: Topic<T>, ...events: T[]): Promise<void>;
  publish<S extends string>(topic: Untyped<S>, ...events: unknown[]): Promise<void>;
  subscribe<T>(topic: Topic<T>, handler: (event: T) => void): Promise<Subscription>;
  subscribe<S extends string>(topic: Untyped<S>, handler: (event: unknown) => void): Promise<Subscription>;
  /** The events the topic still holds, oldest first (at most `limit`, the newest of them). */
  history<T>(topic: Topic<T>, limit?: number): Promise<T[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** How many events history() returns by default: the Redis stream's cap. */
export const HISTORY_LIMIT = 1000;
