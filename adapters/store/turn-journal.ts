import { LeaseLostError } from '../../kernel/lease-lost.js';
import type { Db } from '../db/port.js';
import type { JournalFence, ModelStep, ToolStep, ToolStepResult, TurnJournal, TurnJournalRepository } from './ports/turn-journal.js';

/**
 * The fence of every journal write, in the statement itself: the conversation's lease
 * is this token's and unexpired. FOR SHARE makes a takeover and a write serialize, so a
 * write never lands after another drain took the lease and read the journal.
 */
const FENCE = `select 1 from conversations where id = $1 and lease_token = $2 and lease_until > now() for share`;

/** Upserts one step under the fence; `keepFinished` leaves a finished step as it is. */
function upsert(keepFinished: boolean): string {
  return `with f as (${FENCE}),
     w as (
       insert into turn_journal (turn_id, kind, key, status, entry)
       select $3, $4, $5, $6, $7::jsonb from f
       on conflict (turn_id, kind, key) do update set status = excluded.status, entry = excluded.entry
       ${keepFinished ? `where turn_journal.status <> 'finished'` : ''}
     )
     select exists (select 1 from f) as fenced`;
}

const UPSERT = upsert(false);
const UPSERT_KEEP_FINISHED = upsert(true);

interface JournalRow {
  kind: 'model' | 'tool';
  key: string;
  status: string;
  entry: Record<string, unknown>;
}

/** The step journal in plain SQL (Postgres and PGlite): one row per step, fenced by the conversation's lease. */
export class TurnJournalStore implements TurnJournalRepository {
  constructor(private readonly db: Db) {}

  private async write(sql: string, fence: JournalFence, turnId: string, kind: string, key: string, status: string, entry: unknown, what: string) {
    const r = await this.db.query<{ fenced: boolean }>(sql, [fence.conversationId, fence.lease, turnId, kind, key, status, JSON.stringify(entry)]);
    if (!r.rows[0]?.fenced) throw new LeaseLostError(`the lease on conversation ${fence.conversationId} is no longer this drain's: ${what} was not written`);
  }

  async recordModelStep(fence: JournalFence, s: ModelStep): Promise<void> {
    await this.write(UPSERT, fence, s.turnId, 'model', String(s.index), 'finished', { message: s.message, attempts: s.attempts }, `model step ${s.index}`);
  }

  async recordToolStarted(fence: JournalFence, s: Omit<ToolStep, 'status' | 'result'>): Promise<void> {
    await this.write(UPSERT_KEEP_FINISHED, fence, s.turnId, 'tool', s.toolCallId, 'started', { tool: s.tool }, `tool call ${s.toolCallId} started`);
  }

  async recordToolFinished(fence: JournalFence, s: Omit<ToolStep, 'status' | 'result'> & { result: ToolStepResult }): Promise<void> {
    await this.write(UPSERT, fence, s.turnId, 'tool', s.toolCallId, 'finished', { tool: s.tool, result: s.result }, `tool call ${s.toolCallId} finished`);
  }

  async turnJournal(turnId: string): Promise<TurnJournal> {
    const rows = (await this.db.query<JournalRow>(`select kind, key, status, entry from turn_journal where turn_id = $1 order by recorded_at, key`, [turnId]))
      .rows;
    const models: ModelStep[] = [];
    const tools: ToolStep[] = [];
    for (const r of rows) {
      if (r.kind === 'model') models.push({ turnId, index: Number(r.key), message: r.entry.message, attempts: (r.entry.attempts as unknown[]) ?? [] });
      else
        tools.push({
          turnId,
          toolCallId: r.key,
          tool: String(r.entry.tool),
          status: r.status === 'finished' ? 'finished' : 'started',
          ...(r.status === 'finished' ? { result: r.entry.result as ToolStepResult } : {}),
        });
    }
    models.sort((a, b) => a.index - b.index);
    return { models, tools };
  }
}
