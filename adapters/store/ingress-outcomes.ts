import type { Db } from '../db/port.js';

import type { IngressOutcomeRepository, OutcomeClaim } from './ports/ingress-outcomes.js';

export type { IngressOutcomeRepository, OutcomeClaim };

export class PgIngressOutcomes<T = unknown> implements IngressOutcomeRepository<T> {
  constructor(private readonly db: Db) {}

  async claim(channel: string, externalId: string, staleAfterMs: number): Promise<OutcomeClaim<T>> {
    // One statement, so the row lock decides between concurrent deliveries (no read-modify-write).
    const claimed = await this.db.query(
      `insert into ingress_outcomes (channel, external_id) values ($1, $2)
       on conflict (channel, external_id) do update
         set outcome = null, claimed_at = now(), completed_at = null, expires_at = null
         where ingress_outcomes.expires_at <= now()
            or (ingress_outcomes.outcome is null and ingress_outcomes.claimed_at < now() - $3::int * interval '1 millisecond')
       returning 1`,
      [channel, externalId, Math.round(staleAfterMs)],
    );
    if (claimed.rowCount > 0) return { state: 'claimed' };
    const row = (
      await this.db.query<{ outcome: T | null }>('select outcome from ingress_outcomes where channel = $1 and external_id = $2', [channel, externalId])
    ).rows[0];
    // Deleted in between (released or pruned): the caller asks again.
    if (!row || row.outcome === null) return { state: 'pending' };
    return { state: 'recorded', outcome: row.outcome };
  }

  async complete(channel: string, externalId: string, outcome: T, ttlMs?: number): Promise<void> {
    await this.db.query(
      `update ingress_outcomes set outcome = $3, completed_at = now(),
         expires_at = case when $4::int is null then null else now() + $4::int * interval '1 millisecond' end
       where channel = $1 and external_id = $2`,
      [channel, externalId, JSON.stringify(outcome), ttlMs === undefined ? null : Math.max(0, Math.round(ttlMs))],
    );
  }

  async release(channel: string, externalId: string): Promise<void> {
    await this.db.query('delete from ingress_outcomes where channel = $1 and external_id = $2 and outcome is null', [channel, externalId]);
  }

  async prune(olderThanMs: number): Promise<number> {
    const r = await this.db.query(`delete from ingress_outcomes where claimed_at < now() - $1::bigint * interval '1 millisecond'`, [Math.round(olderThanMs)]);
    return r.rowCount;
  }
}
