/**
 * Operator approvals end to end: a fake model asks for shell commands, the
 * approval engine parks the turn, operators answer over the HTTP API and the
 * CLI, and the turn resumes (or not) exactly as decided.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, OTHER_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const OPERATOR_KEY = 'op-key-0000001';
const OTHER_OPERATOR_KEY = 'op-key-0000002';
/** A key of its own for the code-guessing test: its wrong codes count against it for ten minutes. */
const GUESSER_KEY = 'sk-test-guesser-0003';

/** The fake model: run the command the user asked for; after a tool result, report it. */
function agentLike(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown; tool_calls?: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 300)}`);
  const text = String(typeof last.content === 'string' ? last.content : JSON.stringify(last.content));
  const m = /run: (.+)$/.exec(text);
  return m ? toolCall('shell_exec', { command: m[1] }) : reply('nothing to run');
}

const lastToolText = (fake: FakeLlm) => {
  const msgs = fake.requests[fake.requests.length - 1]!.body.messages as Array<{ role: string; content: unknown }>;
  return String(msgs.filter((m) => m.role === 'tool').pop()?.content ?? '');
};

async function post(gw: string, path: string, key: string, body?: unknown) {
  const r = await fetch(`${gw}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as any };
}

describe('approvals (embedded)', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(agentLike);
    gw = await startGateway(
      testConfig(
        fake,
        {},
        { http: { apiKeys: [API_KEY, OTHER_KEY, GUESSER_KEY], operatorKeys: [OPERATOR_KEY, OTHER_OPERATOR_KEY] }, approvals: { timeoutMs: 60_000 } },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  const ask = async (conversation: string, command: string, key = API_KEY) => {
    const r = await openaiClient(gw.url!, key, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: `run: ${command}` }],
    });
    return { text: r.choices[0]!.message.content!, sb: (r as any).switchboard };
  };
  const workspace = async (conversation: string) => {
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${conversation}/%`])).rows[0]!;
    return { dir: workspaceFor(gw.config.dataDir, conv.id), id: conv.id };
  };
  const finalReply = async (conversation: string, key = API_KEY) =>
    eventually(async () => {
      const r = await post(gw.url!, `/v1/conversations/${conversation}/messages`, key);
      const last = r.body.data?.[r.body.data.length - 1];
      return last?.role === 'assistant' && last.content.startsWith('tool said') ? last.content : null;
    });

  it('asks, parks, and on approval runs the call once with exactly the approved arguments', async () => {
    const { text, sb } = await ask('appr-yes', 'echo hi >> out.txt');
    expect(sb.approval).toMatchObject({ tool: 'shell_exec', tier: 'caution' });
    expect(sb.approval.code).toMatch(/^[ACDEFGHJKMNPQRTUVWXY34679]{5}$/);
    expect(new Date(sb.approval.expiresAt).getTime()).toBeGreaterThan(Date.now());
    // The requester (a user key, approvals.requesterMay empty) may not answer it: told who can.
    expect(text).toContain(`An operator must approve this (code ${sb.approval.code}).`);
    expect(sb.approval.selfApprovable).toBe(false);
    const { dir, id } = await workspace('appr-yes');
    expect(existsSync(join(dir, 'out.txt'))).toBe(false); // not run before the answer
    const turn = await gw.infra.store.turn(sb.turn);
    expect(turn!.status).toBe('parked');

    const r = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'approve' });
    expect(r.status).toBe(200);
    expect(r.body.approval).toMatchObject({ status: 'approved', tool: 'shell_exec' });
    expect(await finalReply('appr-yes')).toContain('exit code 0');
    expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('hi\n');
    const row = await gw.infra.approvals.byCode(sb.approval.code);
    expect(row).toMatchObject({ status: 'executed', decidedVia: 'http' });
    expect((await gw.infra.store.turns(id)).map((t) => t.status)).toEqual(['done']);
    // The same answer again (a retry whose first reply was lost) is told it stands; nothing runs again.
    const again = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'approve' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ ok: true, message: `${sb.approval.code} already approved by you.`, approval: { status: 'executed' } });
    // Another operator, or another decision, is refused.
    const other = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OTHER_OPERATOR_KEY, { decision: 'approve' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('already_decided');
    const reversed = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' });
    expect(reversed.status).toBe(409);
    expect(reversed.body.error.code).toBe('already_decided');
    expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('hi\n');
    // Audited: request and decision, who and from where.
    const trail = await gw.infra.approvals.auditTrail(sb.approval.code);
    expect(trail.map((t) => t.action)).toEqual(['approval.requested', 'approval.approved']);
    expect(trail[1]!.actor).toMatch(/^http:op:/);
  });

  it('on denial does not run the call, and the model is told', async () => {
    const { sb } = await ask('appr-no', 'echo no >> denied.txt');
    const r = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' });
    expect(r.status).toBe(200);
    expect(await finalReply('appr-no')).toMatch(/Not approved/);
    const { dir } = await workspace('appr-no');
    expect(existsSync(join(dir, 'denied.txt'))).toBe(false);
  });

  it('refuses answers from non-operators and unknown codes', async () => {
    const { sb } = await ask('appr-who', 'echo x >> who.txt');
    const requester = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, API_KEY, { decision: 'approve' });
    expect(requester.status).toBe(403);
    // Someone else's live code reads exactly like an unknown one: no oracle.
    const stranger = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OTHER_KEY, { decision: 'approve' });
    const strangerUnknown = await post(gw.url!, `/v1/approvals/ZZZZZ`, OTHER_KEY, { decision: 'approve' });
    expect(stranger.status).toBe(404);
    expect(strangerUnknown.status).toBe(404);
    expect(stranger.body.error.code).toBe('unknown_code');
    expect(stranger.body.error.message).toBe(strangerUnknown.body.error.message.replace('ZZZZZ', sb.approval.code));
    const unknown = await post(gw.url!, `/v1/approvals/ZZZZZ`, OPERATOR_KEY, { decision: 'approve' });
    expect(unknown.status).toBe(404);
    const bad = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'maybe' });
    expect(bad.status).toBe(400);
    expect((await gw.infra.approvals.byCode(sb.approval.code))!.status).toBe('pending');
  });

  it('stops a non-operator guessing codes after ten wrong ones, even for a code that exists', async () => {
    const { sb } = await ask('appr-guess', 'echo x >> guess.txt', GUESSER_KEY);
    const guesses = ['AAAAA', 'CCCCC', 'DDDDD', 'EEEEE', 'FFFFF', 'GGGGG', 'HHHHH', 'JJJJJ', 'KKKKK', 'MMMMM'];
    const KEY3 = GUESSER_KEY; // the requester: their own code is theirs to see, but guesses count
    for (const g of guesses) expect((await post(gw.url!, `/v1/approvals/${g}`, KEY3, { decision: 'deny' })).status).toBe(404);
    const blocked = await post(gw.url!, `/v1/approvals/${sb.approval.code}`, KEY3, { decision: 'deny' });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('too_many_attempts');
    // Operators are not limited, and the request is still pending for them.
    expect((await gw.infra.approvals.byCode(sb.approval.code))!.status).toBe('pending');
    expect((await post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' })).status).toBe(200);
  });

  it('two operators answering at once: one decision wins, the other is told', async () => {
    const { sb } = await ask('appr-race', 'echo race >> race.txt');
    const [a, b] = await Promise.all([
      post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'approve' }),
      post(gw.url!, `/v1/approvals/${sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    expect(loser.body.error.message).toMatch(/already (approved|denied)/);
  });

  it('asks again when a later call has other arguments; "always allow" then lets the same call through', async () => {
    const first = await ask('appr-always', 'touch one.txt');
    expect(first.sb.approval.alwaysPermitted).toBe(true); // the card offers "always" to whoever may answer it
    const r = await post(gw.url!, `/v1/approvals/${first.sb.approval.code}`, OPERATOR_KEY, { decision: 'always' });
    expect(r.body.message).toMatch(/always allowed from now on in this conversation \(rule #\d+: exactly shell_exec touch one\.txt\)/);
    expect(r.body.rule).toMatchObject({ tool: 'shell_exec', pattern: 'touch one.txt', scope: 'conversation' });
    await finalReply('appr-always');
    const { dir } = await workspace('appr-always');
    expect(existsSync(join(dir, 'one.txt'))).toBe(true);
    // Same command: allowed by the rule, no approval this time.
    const same = await ask('appr-always', 'touch one.txt');
    expect(same.sb.approval).toBeUndefined();
    expect(same.text).toContain('tool said');
    // Other arguments: asked again.
    const other = await ask('appr-always', 'touch two.txt');
    expect(other.sb.approval.code).not.toBe(first.sb.approval.code);
    expect(existsSync(join(dir, 'two.txt'))).toBe(false);
    // A redirected command can never become a rule: no ALWAYS offered, and "always" is refused.
    const redirected = await ask('appr-always-redirect', 'echo one >> log.txt');
    expect(redirected.text).not.toMatch(/ALWAYS/);
    expect(redirected.sb.approval.alwaysPermitted).toBe(false);
    const refused = await post(gw.url!, `/v1/approvals/${redirected.sb.approval.code}`, OPERATOR_KEY, { decision: 'always' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('always_not_permitted');
  });

  it('answers approvals typed into the chat, tolerantly, and explains refusals', async () => {
    const { sb } = await ask('appr-chat', 'echo chat >> chat.txt');
    const code = sb.approval.code as string;
    const say = async (key: string, content: string) => {
      const r = await openaiClient(gw.url!, key, { 'X-Switchboard-Conversation': 'appr-chat' }).chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content }],
      });
      return { text: r.choices[0]!.message.content!, sb: (r as any).switchboard };
    };
    const before = fake.requests.length;
    expect((await say(API_KEY, `yes ${code}`)).text).toMatch(/Only an operator/); // the requester may not
    expect((await say(OPERATOR_KEY, 'YES AAAAA')).text).toMatch(/no approval request with code AAAAA/);
    expect(fake.requests.length).toBe(before); // answers are not messages for the model
    const ok = await say(OPERATOR_KEY, `  Approve: ${code.toLowerCase()}!  `);
    expect(ok.text).toMatch(new RegExp(`${code} approved`));
    expect(ok.sb.approvalAnswer).toMatchObject({ code, ok: true, status: 'approved' });
    expect((await say(OPERATOR_KEY, `no ${code}`)).text).toMatch(/already approved/);
    // Typed again (the reply was lost): it stands, and nothing is decided twice.
    const twice = await say(OPERATOR_KEY, `yes ${code}`);
    expect(twice.text).toBe(`${code} already approved by you.`);
    expect(twice.sb.approvalAnswer).toMatchObject({ code, ok: true });
    expect(await finalReply('appr-chat')).toContain('exit code 0');
  });

  it('never asks for a hard-blocked command: it is refused outright', async () => {
    const r = await ask('appr-blocked', 'rm -rf /');
    expect(r.sb.approval).toBeUndefined();
    expect(lastToolText(fake)).toMatch(/Refused by policy \(blocked\)/);
  });

  it('lists pending approvals for operators only, and the CLI answers them', async () => {
    const { sb } = await ask('appr-cli', 'echo cli >> cli.txt');
    expect((await post(gw.url!, '/v1/approvals', API_KEY)).status).toBe(403);
    const env = { PATH: process.env.PATH ?? '', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY };
    // Asynchronous: the gateway answering the CLI runs in this very process.
    const cli = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'approvals', ...args], { env });
        let stdout = '';
        let stderr = '';
        p.stdout.on('data', (d) => (stdout += d));
        p.stderr.on('data', (d) => (stderr += d));
        p.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    const list = await cli('list', '--json');
    expect(list.status).toBe(0);
    const mine = (JSON.parse(list.stdout) as Array<Record<string, unknown>>).find((a) => a.code === sb.approval.code)!;
    expect(mine).toMatchObject({ tool: 'shell_exec', arguments: { command: 'echo cli >> cli.txt' }, tier: 'caution' });
    expect(typeof mine.conversation).toBe('string');
    expect(typeof mine.expiresAt).toBe('string');
    const ok = await cli('approve', sb.approval.code.toLowerCase());
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/approved/);
    // The same answer again is told it stands; another decision is refused.
    const again = await cli('approve', sb.approval.code);
    expect(again.status).toBe(0);
    expect(again.stdout.trim()).toBe(`${sb.approval.code} already approved by you.`);
    const replay = await cli('deny', sb.approval.code);
    expect(replay.status).toBe(1);
    expect(replay.stderr).toMatch(/already approved/);
    expect(await finalReply('appr-cli')).toContain('exit code 0');
  });
});

describe('approval deadlines', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(agentLike);
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] }, approvals: { timeoutMs: 1_000 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('expire fail-closed: not run, and the conversation is told', async () => {
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'appr-late' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'run: echo late >> late.txt' }],
    });
    const code = (r as any).switchboard.approval.code;
    const told = await eventually(async () => {
      const m = await post(gw.url!, '/v1/conversations/appr-late/messages', API_KEY);
      const last = m.body.data[m.body.data.length - 1];
      return last?.role === 'assistant' && last.content.startsWith('tool said') ? last.content : null;
    }, 10_000);
    expect(told).toMatch(/expired/);
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('expired');
    const answer = await post(gw.url!, `/v1/approvals/${code}`, OPERATOR_KEY, { decision: 'approve' });
    expect(answer.status).toBe(410);
    expect(answer.body.error.code).toBe('expired');
  });
});

describe('a restart of every process while a turn is parked', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  const procs: GatewayProcess[] = [];
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(agentLike);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('loses nothing: the later answer resumes the turn', async () => {
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_DATA: join('/tmp', `sb-restart-${Date.now()}`),
      // A killed worker's job and conversation lease free up after this long.
      SWITCHBOARD_LOCK_DURATION_MS: '2000',
      SWITCHBOARD_STALLED_INTERVAL_MS: '1000',
    };
    procs.push(await GatewayProcess.spawn('ingress', env), await GatewayProcess.spawn('worker', env));
    const r = await openaiClient(procs[0]!.url!, API_KEY, { 'X-Switchboard-Conversation': 'appr-restart' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'run: echo survived >> s.txt' }],
    });
    const code = (r as any).switchboard.approval.code as string;
    await Promise.all(procs.splice(0).map((p) => p.kill('SIGKILL')));
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress, await GatewayProcess.spawn('worker', env));
    const cli = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'approvals', 'approve', code], {
      env: { PATH: process.env.PATH ?? '', SWITCHBOARD_URL: ingress.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY },
      encoding: 'utf8',
    });
    expect(cli.status).toBe(0);
    const told = await eventually(async () => {
      const m = await post(ingress.url!, '/v1/conversations/appr-restart/messages', API_KEY);
      const last = m.body.data?.[m.body.data.length - 1];
      return last?.role === 'assistant' && last.content.startsWith('tool said') ? last.content : null;
    }, 20_000).catch((err) => {
      if (process.env.SB_DEBUG) for (const p of procs) console.log(p.logs.slice(-40).join('\n'));
      throw err;
    });
    expect(told).toContain('exit code 0');
  });
});
