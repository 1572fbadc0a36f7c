/**
 * Export and erasure as a user and an operator ask for them: a conversation with a tool call and
 * an approval comes out as JSON and Markdown with who said what; erasing a conversation or a
 * sender leaves no row (outside the audit ledger, which keeps only metadata) and no workspace
 * file of theirs, and the erasure itself is in the ledger.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import { DataRightsStore, ERASED_TEXT } from '../adapters/store/data-rights.js';
import type { Gateway } from '../app/gateway.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { API_KEY, OTHER_KEY, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { toolCommandModel, toolResultOf } from './support/tool-turns.js';

type Json = Record<string, unknown>;

describe('transcript export and erasure', { timeout: 180_000 }, () => {
  let fake: FakeLlm;
  let gw: Gateway;
  const call = async (path: string, key: string, method = 'GET') => {
    const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };
  const json = async (path: string, key: string, method = 'GET') => {
    const r = await call(path, key, method);
    return { status: r.status, body: JSON.parse(r.text) as Json };
  };
  /** Every row of every table but the ledger, as text: what an erasure must leave nothing of. */
  const everyRow = async () => {
    const db = gw.infra.store.db;
    const tables = (
      await db.query<{ table_name: string }>(
        `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not in ('audit', 'schema_migrations')`,
      )
    ).rows.map((r) => r.table_name);
    const rows: string[] = [];
    for (const t of tables) rows.push(...(await db.query<{ r: string }>(`select t::text as r from "${t}" t`)).rows.map((x) => `${t}: ${x.r}`));
    return rows;
  };

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(toolCommandModel);
    gw = await startGateway(testConfig(fake, {}, { tools: { planner: false } }));
  }, 180_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('exports a conversation with its tool calls and approval, as JSON and Markdown, to its own key only', async () => {
    await toolResultOf(gw, fake, { conversation: 'export-me', text: 'write: notes.txt|tea at four', approveWith: TEST_OPERATOR_KEY });
    const result = await toolResultOf(gw, fake, { conversation: 'export-me', text: 'run: rm -f notes.txt', approveWith: TEST_OPERATOR_KEY });
    expect(result).not.toMatch(/denied|refused/i);

    const { status, body } = await json('/v1/conversations/export-me/export', API_KEY);
    expect(status).toBe(200);
    const messages = body.messages as Array<Json>;
    const users = messages.filter((m) => m.role === 'user');
    expect(users.map((m) => m.text)).toEqual(['write: notes.txt|tea at four', 'run: rm -f notes.txt']);
    expect(new Set(users.map((m) => m.author)).size).toBe(1);
    expect(String(users[0]!.author)).toMatch(/^http:/);
    expect(body.senders).toEqual([users[0]!.author]);
    const calls = messages.flatMap((m) => (m.toolCalls as Array<Json> | undefined) ?? []);
    expect(calls.map((c) => c.name)).toEqual(['file_write', 'shell_exec']);
    expect(calls[1]!.arguments).toMatchObject({ command: 'rm -f notes.txt' });
    expect(messages.filter((m) => m.role === 'tool').map((m) => m.author)).toEqual(['file_write', 'shell_exec']);
    const approvals = body.approvals as Array<Json>;
    expect(approvals.map((a) => a.tool)).toEqual(['file_write', 'shell_exec']);
    expect(approvals[1]).toMatchObject({ arguments: { command: 'rm -f notes.txt' }, requester: users[0]!.author, decidedVia: expect.any(String) });
    expect(approvals[1]!.decidedBy).toEqual(expect.any(String));
    expect((body.turns as unknown[]).length).toBe(2);

    const md = await call('/v1/conversations/export-me/export?format=markdown', API_KEY);
    expect(md.status).toBe(200);
    expect(md.type).toMatch(/text\/markdown/);
    expect(md.text).toContain('# Conversation http/');
    expect(md.text).toContain('> run: rm -f notes.txt');
    expect(md.text).toContain('tool call `shell_exec`');
    expect(md.text).toMatch(/\| [A-Z0-9]{5} \| shell_exec \| caution \| (approved|executed) \|/);

    // Another key does not see it, by its name nor by its internal id (an id is for operators only),
    // and cannot erase it either way; a bad format is refused.
    const internal = String((body.conversation as Json).id);
    for (const path of ['/v1/conversations/export-me', `/v1/conversations/${encodeURIComponent(internal)}`]) {
      expect((await json(`${path}/export`, OTHER_KEY)).status).toBe(404);
      expect((await json(path, OTHER_KEY, 'DELETE')).status).toBe(404);
      expect((await json(`${path}/export`, 'sk-not-a-key')).status).toBe(401);
    }
    expect((await json('/v1/export', API_KEY)).status).toBe(403);
    expect((await json('/v1/conversations/export-me/export', API_KEY)).status).toBe(200);
    expect((await json('/v1/conversations/export-me/export', OTHER_KEY)).status).toBe(404);
    expect((await json('/v1/conversations/export-me/export?format=pdf', API_KEY)).status).toBe(400);
    // Sender exports and everything are for operators.
    expect((await json(`/v1/senders/${encodeURIComponent(String(users[0]!.author))}/export`, API_KEY)).status).toBe(403);
    const all = await json('/v1/export', TEST_OPERATOR_KEY);
    expect((all.body.conversations as Json[]).some((c) => (c.conversation as Json).key === (body.conversation as Json).key)).toBe(true);
  });

  it('erases a conversation: no row, no workspace file, and the erasure is in the ledger', async () => {
    const { body } = await json('/v1/conversations/export-me/export', API_KEY);
    const id = String((body.conversation as Json).id);
    await toolResultOf(gw, fake, { conversation: 'export-me', text: 'write: keep.txt|secret plans', approveWith: TEST_OPERATOR_KEY });
    expect(existsSync(workspaceFor(gw.config.dataDir, id))).toBe(true);
    expect((await json('/v1/conversations/export-me', OTHER_KEY, 'DELETE')).status).toBe(404);

    const erased = await json('/v1/conversations/export-me', API_KEY, 'DELETE');
    expect(erased.status).toBe(200);
    expect((erased.body.rows as Json).messages).toBeGreaterThan(0);
    expect(existsSync(workspaceFor(gw.config.dataDir, id))).toBe(false);
    expect((await everyRow()).filter((r) => r.includes(id) || r.includes('secret plans') || r.includes('tea at four'))).toEqual([]);
    expect((await json('/v1/conversations/export-me/export', API_KEY)).status).toBe(404);

    const ledger = new AuditLedgerStore(gw.infra.store.db);
    const entries = await ledger.entries(0, 10_000);
    expect(entries.filter((e) => e.action === 'erasure.conversation').map((e) => e.subject)).toEqual([id]);
    expect(entries.some((e) => e.details.includes('secret plans'))).toBe(false);
    expect((await ledger.verify()).ok).toBe(true);
  });

  it('erases a sender: their conversations whole, their messages in a shared one, their notes and access', async () => {
    await toolResultOf(gw, fake, { key: OTHER_KEY, conversation: 'mine-1', text: 'write: a.txt|my address is 1 Elm St', approveWith: TEST_OPERATOR_KEY });
    await toolResultOf(gw, fake, { key: OTHER_KEY, conversation: 'mine-2', text: 'read: a.txt', approveWith: TEST_OPERATOR_KEY });
    const who = String(((await json('/v1/conversations/mine-1/export', OTHER_KEY)).body.senders as string[])[0]);
    const ids = await new DataRightsStore(gw.infra.store.db).conversationsOf(who);
    expect(ids).toHaveLength(2);
    const db = gw.infra.store.db;
    // A shared room (as Slack's would be): they and someone else wrote in it.
    await db.query(`insert into conversations (id, key, channel) values ('c_room', 'slack/T1/C1/-', 'slack')`);
    await db.query(`insert into turns (id, conversation_id, seq, status) values ('t_them', 'c_room', 1, 'done'), ('t_other', 'c_room', 2, 'done')`);
    await db.query(
      `insert into inbox (conversation_id, channel, external_id, sender, sender_identity, text, received_at, turn_id, consumed_at) values
       ('c_room', 'slack', 'e1', '{"id":"U1"}', $1, 'call me at 555-0100', now(), 't_them', now()),
       ('c_room', 'slack', 'e2', '{"id":"U2"}', 'slack:T1:U2', 'lunch?', now(), 't_other', now())`,
      [who],
    );
    await db.query(
      `insert into messages (conversation_id, turn_id, role, content) values
       ('c_room', 't_them', 'user', '{"role":"user","content":"call me at 555-0100","timestamp":1}'),
       ('c_room', 't_other', 'user', '{"role":"user","content":"lunch?","timestamp":2}')`,
    );
    await db.query(`insert into memory (scope, scope_key, body) values ('sender', $1, 'likes tea')`, [who]);

    const sender = encodeURIComponent(who);
    const exported = await json(`/v1/senders/${sender}/export`, TEST_OPERATOR_KEY);
    const convs = exported.body.conversations as Array<{ messages: Json[] }>;
    expect(convs).toHaveLength(3);
    const room = convs.find((c) => c.messages.some((m) => m.text === 'call me at 555-0100'))!;
    expect(room.messages.map((m) => m.text)).toEqual(['call me at 555-0100']); // not the other person's

    expect((await json('/v1/senders/not-an-identity/export', TEST_OPERATOR_KEY)).status).toBe(400);
    expect((await json(`/v1/senders/${sender}`, API_KEY, 'DELETE')).status).toBe(403);
    const erased = await json(`/v1/senders/${sender}`, TEST_OPERATOR_KEY, 'DELETE');
    expect(erased.status).toBe(200);
    expect([...(erased.body.conversations as string[])].sort()).toEqual([...ids].sort());

    const left = await everyRow();
    expect(left.filter((r) => r.includes(who) || ids.some((id) => r.includes(id)) || /1 Elm St|555-0100|likes tea/.test(r))).toEqual([]);
    for (const id of ids) expect(existsSync(workspaceFor(gw.config.dataDir, id))).toBe(false);
    // The room stays for the other person, with a marker where their message was.
    const roomRows = (await db.query<{ c: string }>(`select content->>'content' as c from messages where conversation_id = 'c_room' order by id`)).rows;
    expect(roomRows.map((r) => r.c)).toEqual([ERASED_TEXT, 'lunch?']);

    const ledger = new AuditLedgerStore(db);
    const erasure = (await ledger.entries(0, 10_000)).filter((e) => e.action === 'erasure.sender');
    expect(erasure).toHaveLength(1);
    expect(erasure[0]!.subject).toMatch(/^sender:[0-9a-f]{32}$/);
    expect(erasure[0]!.subject).not.toContain(who);
    expect((await ledger.verify()).ok).toBe(true);
  });
});
