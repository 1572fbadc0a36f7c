import type { Db } from '../db/port.js';
import type { MemoryListing, MemoryRepository } from './ports/memory.js';

/** Memory notes in plain SQL (Postgres and PGlite). */
export class MemoryNoteStore implements MemoryRepository {
  constructor(private readonly db: Db) {}

  async addMemory(scope: 'global' | 'conversation' | 'sender', scopeKey: string, body: string): Promise<number> {
    return (await this.db.query<{ id: number }>('insert into memory (scope, scope_key, body) values ($1, $2, $3) returning id', [scope, scopeKey, body]))
      .rows[0]!.id;
  }

  /** Notes visible to a conversation and its sender (a canonical identity), newest first, filtered by words of the query. */
  async searchMemory(conversationId: string, senderId: string, query: string, limit = 20): Promise<Array<{ id: number; scope: string; body: string }>> {
    const words = query
      .toLowerCase()
      .split(/\W+/)
      .filter((w) => w.length > 2)
      .slice(0, 8);
    const r = await this.db.query<{ id: number; scope: string; body: string }>(
      `select id, scope, body from memory
       where (scope = 'global' or (scope = 'conversation' and scope_key = $1) or (scope = 'sender' and scope_key = $2))
         and ($3::text[] = '{}' or exists (select 1 from unnest($3::text[]) w where lower(body) like '%' || w || '%'))
       order by id desc limit $4`,
      [conversationId, senderId, words, limit],
    );
    return r.rows;
  }

  /** Operators: every note, optionally of one scope (and key). */
  async listMemory(scope?: string, scopeKey?: string, limit = 200): Promise<MemoryListing[]> {
    return (
      await this.db.query<MemoryListing>(
        `select id, scope, scope_key as "scopeKey", body, created_at as "createdAt" from memory where ($1::text is null or scope = $1) and ($2::text is null or scope_key = $2) order by id desc limit $3`,
        [scope ?? null, scopeKey ?? null, limit],
      )
    ).rows;
  }

  async deleteMemory(id: number): Promise<boolean> {
    return (await this.db.query('delete from memory where id = $1', [id])).rowCount === 1;
  }

  /**
   * A user's delete (the memory_forget tool): only what that user (a canonical
   * identity) may write, their own sender notes and this conversation's. Global notes are the
   * operators' (deleteMemory), and another sender's notes are not this one's.
   */
  async forgetMemory(id: number, conversationId: string, senderId: string): Promise<boolean> {
    return (
      (
        await this.db.query(`delete from memory where id = $1 and ((scope = 'conversation' and scope_key = $2) or (scope = 'sender' and scope_key = $3))`, [
          id,
          conversationId,
          senderId,
        ])
      ).rowCount === 1
    );
  }
}
