/**
 * Operators manage schedules over the HTTP API and `switchboard schedule add|ls|rm --json`: another
 * key gets 403, a bad cron or time zone is a 400 naming the field, `ls` shows the next tick and the
 * last run's status, and every create and delete is in the hash-chained audit ledger.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import type { Db } from '../adapters/db/port.js';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import { migrate } from '../adapters/store/migrate.js';
import { ScheduleStore } from '../adapters/store/schedules.js';
import { Store } from '../adapters/store/store.js';
import { runSchedule } from '../app/cli/schedule.js';
import { registerScheduleApi } from '../src/api/schedules-api.js';
import { ApiKeyAuth } from '../src/http/auth.js';
import { HttpServer } from '../src/http/server.js';
import { createLogger } from '../src/log.js';

const sink = () => {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { w, text: () => text };
};

describe('schedules API and CLI', () => {
  let db: Db;
  const server = new HttpServer({ host: '127.0.0.1', port: 0, maxBodyBytes: 64 * 1024, log: createLogger('silent') });
  let env: Record<string, string>;
  let conversationKey: string;
  beforeAll(async () => {
    db = await openPglite();
    await migrate(db);
    const store = new Store(db);
    conversationKey = 'telegram:42';
    await store.accept({ channel: 'telegram', externalId: 'm1', conversationKey, sender: { id: '42' }, text: 'hi', attachments: [], receivedAt: new Date() });
    registerScheduleApi(server, {
      auth: new ApiKeyAuth(['user-key'], false, ['op-key']),
      schedules: new ScheduleStore(db),
      conversations: store,
      defaultTz: 'UTC',
    });
    await server.start();
    env = { SWITCHBOARD_URL: server.url, SWITCHBOARD_OPERATOR_KEY: 'op-key' };
  });
  afterAll(async () => {
    await server.close();
    await db.close();
  });

  const cli = async (args: string[], e = env) => {
    const out = sink();
    const err = sink();
    const code = await runSchedule(args, e, out.w as never, err.w as never);
    return { code, out: out.text(), err: err.text() };
  };

  it('adds, lists and removes a schedule, each change audited', async () => {
    const added = await cli([
      'add',
      '--conversation',
      conversationKey,
      '--cron',
      '0 9 * * 1-5',
      '--tz',
      'Europe/Amsterdam',
      '--prompt',
      'Morning brief',
      '--json',
    ]);
    expect(added.code).toBe(0);
    const s = JSON.parse(added.out);
    expect(s).toMatchObject({ kind: 'cron', cron: '0 9 * * 1-5', tz: 'Europe/Amsterdam', channel: 'telegram', lastRun: null });
    expect(s.nextAt).toMatch(/T0[78]:00:00\.000Z$/); // 09:00 in Amsterdam

    const listed = await cli(['ls', '--json']);
    expect(JSON.parse(listed.out).map((x: { id: string }) => x.id)).toEqual([s.id]);

    const removed = await cli(['rm', s.id, '--json']);
    expect(JSON.parse(removed.out)).toEqual({ ok: true, id: s.id, deleted: true });
    expect(JSON.parse((await cli(['ls', '--json'])).out)).toEqual([]);
    expect((await cli(['rm', s.id])).code).toBe(1);

    const audit = (
      await db.query<{ actor: string; action: string; subject: string }>(`select actor, action, subject from audit where action like 'schedule.%' order by seq`)
    ).rows;
    expect(audit.map((a) => [a.action, a.subject])).toEqual([
      ['schedule.created', s.id],
      ['schedule.deleted', s.id],
    ]);
    expect(audit[0]!.actor).toMatch(/^http:/);
    expect((await new AuditLedgerStore(db).verify()).ok).toBe(true);
  });

  it('refuses a non-operator key and names the bad field', async () => {
    const res = await fetch(`${server.url}/v1/schedules`, { headers: { authorization: 'Bearer user-key' } });
    expect(res.status).toBe(403);
    const post = (body: unknown) =>
      fetch(`${server.url}/v1/schedules`, {
        method: 'POST',
        headers: { authorization: 'Bearer op-key', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const badCron = await post({ conversation: conversationKey, cron: 'every day', prompt: 'x' });
    expect(badCron.status).toBe(400);
    expect(((await badCron.json()) as { error: { param: string } }).error.param).toBe('cron');
    const badTz = await post({ conversation: conversationKey, cron: '0 9 * * *', tz: 'Mars/Olympus', prompt: 'x' });
    expect(((await badTz.json()) as { error: { param: string } }).error.param).toBe('tz');
    const noConv = await post({ conversation: 'nope', at: '2030-01-01T09:00:00Z', prompt: 'x' });
    expect(((await noConv.json()) as { error: { param: string } }).error.param).toBe('conversation');
    const once = await post({ conversation: conversationKey, at: '2030-01-01T09:00:00+01:00', prompt: 'Happy new year' });
    expect(once.status).toBe(201);
    expect(await once.json()).toMatchObject({ kind: 'once', at: '2030-01-01T08:00:00.000Z', nextAt: '2030-01-01T08:00:00.000Z', tz: 'UTC' });
  });
});
