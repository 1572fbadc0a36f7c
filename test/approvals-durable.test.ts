/**
 * Approvals never wedge (issue #21), on a real Postgres: an answer whose connection
 * drops after COMMIT is retried successfully and the turn resumes; a parked turn whose
 * approvals are all decided but which was never unparked is resumed by the recovery
 * sweep (periodic, and at worker start); a database error while an approval is being
 * created fails the attempt, which is retried, and is never the tool's result.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import type { Config } from '../src/config.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { PgFaultProxy } from './support/pg-fault-proxy.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

const OPERATOR_KEY = 'op-key-durable-01';

/** The fake model: run the command the user asked for; after a tool result, report it. */
function agentLike(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 300)}`);
  const text = String(typeof last.content === 'string' ? last.content : JSON.stringify(last.content));
  const m = /run: (.+)$/.exec(text);
  return m ? toolCall('shell_exec', { command: m[1] }) : reply(`heard: ${text}`);
}

/** Everything the model was ever sent, as one text. */
const allSent = (fake: FakeLlm) => fake.requests.map((r) => JSON.stringify(r.body.messages)).join('\n');

describe('approvals never wedge', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const setup = async (opts: { proxy?: boolean } = {}) => {
    const fake = new FakeLlm();
    await fake.start();
    fake.respond(agentLike);
    cleanups.push(() => fake.close());
    const pg: TestDatabase = await createTestDatabase();
    cleanups.push(() => pg.drop());
    const proxy = opts.proxy ? await PgFaultProxy.start(pg.url) : undefined;
    if (proxy) cleanups.push(() => proxy.close());
    const config = (patch: Record<string, unknown> = {}) =>
      testConfig(
        fake,
        { databaseUrl: proxy?.url ?? pg.url },
        { http: { operatorKeys: [OPERATOR_KEY] }, approvals: { timeoutMs: 120_000 }, tools: { planner: false }, ...patch },
      );
    const gateways: Gateway[] = [];
    cleanups.push(async () => {
      for (const g of gateways) await g.close();
    });
    const start = async (cfg: Config) => {
      const gw = await startGateway(cfg);
      gateways.push(gw);
      return gw;
    };
    return { fake, pg, proxy, config, start };
  };

  const ask = async (gw: Gateway, conversation: string, content: string) => {
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content }],
    });
    return { text: r.choices[0]!.message.content!, sb: (r as any).switchboard };
  };
  const answer = async (gw: Gateway, code: string, decision: string) => {
    const r = await fetch(`${gw.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const lastAssistant = async (gw: Gateway, conversation: string, startsWith: string, timeoutMs = 20_000) =>
    eventually(async () => {
      const r = await fetch(`${gw.url}/v1/conversations/${conversation}/messages`, { headers: { authorization: `Bearer ${API_KEY}` } });
      const data = ((await r.json()) as any).data as Array<{ role: string; content: string }> | undefined;
      const last = data?.[data.length - 1];
      return last?.role === 'assistant' && last.content.startsWith(startsWith) ? last.content : null;
    }, timeoutMs);
  const conversationId = async (gw: Gateway, conversation: string) =>
    (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${conversation}/%`])).rows[0]!.id;

  it('scenario 2: the connection drops after the answer committed; the retry succeeds and the turn resumes, once', async () => {
    const { proxy, config, start } = await setup({ proxy: true });
    const gw = await start(config());
    const { sb } = await ask(gw, 'dur-commit', 'run: echo hi >> out.txt');
    const code = sb.approval.code as string;
    expect((await gw.infra.store.turn(sb.turn))!.status).toBe('parked');

    proxy!.dropNextCommitAck();
    const lost = await answer(gw, code, 'approve');
    expect(proxy!.dropped).toBe(1);
    expect(lost.status).toBeGreaterThanOrEqual(500); // the operator could not know it went through
    // It did, whole: decided, audited and the turn unparked, in one transaction.
    expect(await gw.infra.approvals.byCode(code)).toMatchObject({ decidedBy: expect.stringMatching(/^http:op:/) });
    expect((await gw.infra.approvals.auditTrail(code)).map((e) => e.action)).toEqual(['approval.requested', 'approval.approved']);
    expect((await gw.infra.store.turn(sb.turn))!.status).not.toBe('parked');

    // The operator retries: told it is done, not "already decided".
    const retry = await answer(gw, code, 'approve');
    expect(retry.status).toBe(200);
    expect(retry.body.message).toBe(`${code} already approved by you.`);
    expect(retry.body.approval).toMatchObject({ code, tool: 'shell_exec' });
    expect(['approved', 'executed']).toContain(retry.body.approval.status);
    // A different decision is still refused.
    const deny = await answer(gw, code, 'deny');
    expect(deny.status).toBe(409);
    expect(deny.body.error.code).toBe('already_decided');

    expect(await lastAssistant(gw, 'dur-commit', 'tool said')).toContain('exit code 0');
    const dir = workspaceFor(gw.config.dataDir, await conversationId(gw, 'dur-commit'));
    expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('hi\n'); // the tool ran once
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('executed');
    expect((await gw.infra.store.turn(sb.turn))!.status).toBe('done');
    // Nothing waits behind the decided approval: the next message is answered at once.
    const t0 = Date.now();
    const next = await ask(gw, 'dur-commit', 'and now?');
    expect(next.text).toBe('heard: and now?');
    expect(Date.now() - t0).toBeLessThan(5_000);
  }, 90_000);

  it('the sweep resumes a parked turn whose approvals were decided but never unparked, and at worker start', async () => {
    const { pg: pgdb, config, start } = await setup();
    const cfg = config();
    const gw = await start(cfg);
    const live = await ask(gw, 'dur-sweep', 'run: echo swept >> s.txt');
    const down = await ask(gw, 'dur-start', 'run: echo started >> s.txt');
    const expired = await ask(gw, 'dur-expired', 'run: echo never >> s.txt');
    // Decided behind the service's back (as an answer whose unpark was lost): no unpark, no drain.
    const db = gw.infra.store.db;
    await db.query(`update approvals set status = 'approved', decided_by = 'http:op:x', decided_at = now() where code = $1`, [live.sb.approval.code]);
    expect(await lastAssistant(gw, 'dur-sweep', 'tool said')).toContain('exit code 0');
    expect((await gw.infra.approvals.byCode(live.sb.approval.code))!.status).toBe('executed');

    // With the gateway down, one approval is decided and one expires; a new worker whose
    // periodic sweep is far away resumes both at start.
    await gw.close();
    const direct = new pg.Client({ connectionString: pgdb.url });
    await direct.connect();
    try {
      await direct.query(`update approvals set status = 'denied', decided_by = 'http:op:x', decided_at = now() where code = $1`, [down.sb.approval.code]);
      await direct.query(`update approvals set status = 'expired', decided_at = now() where code = $1`, [expired.sb.approval.code]);
    } finally {
      await direct.end();
    }
    const again = await start({ ...cfg, queue: { ...cfg.queue, recoverIntervalMs: 600_000 } });
    expect(await lastAssistant(again, 'dur-start', 'tool said')).toMatch(/Not approved: http:op:x said no/);
    expect(await lastAssistant(again, 'dur-expired', 'tool said')).toMatch(/expired/);
    for (const c of [live, down, expired]) expect((await again.infra.store.turn(c.sb.turn))!.status).toBe('done');
  }, 90_000);

  it('scenario 7: the connection dies while the approval is written; the attempt is retried, the user never sees the error', async () => {
    const { fake, config, start } = await setup();
    const gw = await start(config());
    const db = gw.infra.store.db;
    // The first approval insert kills its own connection (as a Postgres restart would): once.
    await db.query('create sequence approvals_fault');
    await db.query(
      `create function approvals_fault() returns trigger language plpgsql as $$
       begin if nextval('approvals_fault') = 1 then perform pg_terminate_backend(pg_backend_pid()); end if; return new; end $$`,
    );
    await db.query('create trigger approvals_fault before insert on approvals for each row execute function approvals_fault()');

    const { text, sb } = await ask(gw, 'dur-fault', 'run: echo ok >> f.txt');
    expect(text).not.toMatch(/terminat/i);
    expect(allSent(fake)).not.toMatch(/terminat/i); // the model never read it as the tool's output
    const code = sb.approval?.code as string;
    expect(code).toMatch(/^[ACDEFGHJKMNPQRTUVWXY34679]{5}$/);
    expect(text.split(code).length - 1).toBe(1); // the code is shown once
    const conv = await conversationId(gw, 'dur-fault');
    const rows = (await db.query<{ code: string }>('select code from approvals where conversation_id = $1', [conv])).rows;
    expect(rows).toEqual([{ code }]);
    const turn = (await gw.infra.store.turn(sb.turn))!;
    expect(turn).toMatchObject({ status: 'parked' });
    expect(turn.attempt).toBeGreaterThanOrEqual(2); // the first attempt failed and was retried

    expect((await answer(gw, code, 'approve')).status).toBe(200);
    const done = await lastAssistant(gw, 'dur-fault', 'tool said');
    expect(done).toContain('exit code 0');
    expect(done).not.toMatch(/terminat/i);
    expect(readFileSync(join(workspaceFor(gw.config.dataDir, conv), 'f.txt'), 'utf8')).toBe('ok\n');
  }, 90_000);

  it('a connection that dies while the approval row is written: the retried attempt replays the journaled call and asks once', async () => {
    const { config, start } = await setup();
    const gw = await start(config());
    const db = gw.infra.store.db;
    // The audit row of the request (written in the approval's own statement) kills its connection: once, so nothing of it stays.
    await db.query('create sequence audit_fault');
    await db.query(
      `create function audit_fault() returns trigger language plpgsql as $$
       begin if new.action = 'approval.requested' and nextval('audit_fault') = 1 then perform pg_terminate_backend(pg_backend_pid()); end if; return new; end $$`,
    );
    await db.query('create trigger audit_fault before insert on audit for each row execute function audit_fault()');

    const { text, sb } = await ask(gw, 'dur-orphan', 'run: echo once >> o.txt');
    expect(text).not.toMatch(/terminat/i);
    const code = sb.approval.code as string;
    const conv = await conversationId(gw, 'dur-orphan');
    const rows = (
      await db.query<{ code: string; status: string; decided_by: string | null }>(
        'select code, status, decided_by from approvals where conversation_id = $1 order by created_at',
        [conv],
      )
    ).rows;
    // The retry replays the journaled model response (the same tool call id) and writes the
    // request: one request, audited once, the code the user was shown, nothing orphaned.
    expect(rows).toEqual([{ code, status: 'pending', decided_by: null }]);
    expect((await gw.infra.approvals.auditTrail(code)).map((e) => e.action)).toEqual(['approval.requested']);

    expect((await answer(gw, code, 'approve')).status).toBe(200);
    expect(await lastAssistant(gw, 'dur-orphan', 'tool said', 20_000)).toContain('exit code 0'); // not after the orphan's deadline
    expect(readFileSync(join(workspaceFor(gw.config.dataDir, conv), 'o.txt'), 'utf8')).toBe('once\n');
  }, 90_000);
});
