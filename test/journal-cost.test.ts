/**
 * What the step journal costs a turn, in SQL statements on a real Postgres: every
 * statement the gateway process sends is counted (pg's Client.query, the one path
 * of adapters/db/pg.ts). A one-step turn (one model response, no tools) sends no
 * journal statement of its own; a turn with one tool call sends three (the response,
 * the call started, the call finished).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

type Query = (this: pg.Client, ...args: unknown[]) => unknown;

describe('the cost of the step journal', () => {
  let fake: FakeLlm;
  let pgdb: TestDatabase;
  let gw: Gateway;
  const sent: string[] = [];
  const original = pg.Client.prototype.query as unknown as Query;

  beforeAll(async () => {
    (pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0];
      sent.push(typeof q === 'string' ? q : String((q as { text?: string }).text ?? ''));
      return original.apply(this, args);
    };
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      if (msgs[msgs.length - 1]!.role === 'tool') return reply('It is late.');
      return JSON.stringify(msgs).includes('what time') ? toolCall('current_time', {}) : reply('hello');
    });
    pgdb = await createTestDatabase();
    // Sweeps rarely, so that the statements counted are the turn's.
    gw = await startGateway(testConfig(fake, { databaseUrl: pgdb.url }, { tools: { planner: false }, queue: { recoverIntervalMs: 600_000 } }));
  });
  afterAll(async () => {
    (pg.Client.prototype as unknown as { query: Query }).query = original;
    await gw?.close();
    await fake?.close();
    await pgdb?.drop();
  });

  /** The statements one request sends (the turn's, and the ingress's), and those that name the journal. */
  const measure = async (conversation: string, text: string) => {
    await new Promise((r) => setTimeout(r, 300));
    const from = sent.length;
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: text }],
    });
    await new Promise((r) => setTimeout(r, 300)); // the drain's last statements after the answer
    // Periodic work of the process (retention of ingress outcomes, webhook subscribers, the lease
    // renewal a slow turn on a busy machine lives long enough for) is not the turn's.
    const mine = sent
      .slice(from)
      .filter(
        (s) =>
          !/heartbeat|pg_advisory|delete from ingress_outcomes where claimed_at|from webhook_subscribers|update conversations set lease_until = now\(\) \+/i.test(
            s,
          ),
      );
    return {
      all: mine.map((s) => s.replace(/\s+/g, ' ').slice(0, 90)),
      answer: r.choices[0]!.message.content,
      total: mine.length,
      journal: mine.filter((s) => s.includes('turn_journal')),
    };
  };

  it('a one-step turn sends no journal statement; a turn with one tool call sends three', async () => {
    const plain = await measure('cost-plain', 'hi');
    expect(plain.answer).toBe('hello');
    // Only finishTurn names the journal (it deletes the turn's rows in its one statement).
    expect(plain.journal).toHaveLength(1);
    expect(plain.journal[0]).toMatch(/delete from turn_journal/);
    const tool = await measure('cost-tool', 'what time is it?');
    expect(tool.answer).toBe('It is late.');
    expect(tool.journal.map((s) => (s.includes('delete from turn_journal') ? 'finish' : 'write'))).toEqual(['write', 'write', 'write', 'finish']);
    // Besides the journal, a tool call costs what it did before: the operator rules, read once per turn.
    const rules = tool.all.filter((s) => s.includes('from allow_rules')).length;
    expect(rules).toBe(1);
    expect(tool.total - 3 - rules).toBe(plain.total);
    console.log(`statements per request: one-step turn ${plain.total} (no journal write), one tool call ${tool.total} (3 journal writes, 1 rules read)`);
  }, 60_000);
});
