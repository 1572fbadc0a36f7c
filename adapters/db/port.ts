/**
 * The one SQL seam. The store speaks plain Postgres SQL through this port, so the
 * same statements run on a real server (pg) and on PGlite (Postgres in WASM).
 */
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

export interface Db extends Queryable {
  /** Runs fn in one transaction; rolls back when fn throws. Use only `tx` inside fn. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs several statements separated by semicolons (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}
