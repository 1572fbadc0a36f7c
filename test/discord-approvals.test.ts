/**
 * Discord approvals and slash commands end to end: approval buttons (operators
 * by user id or role decide, others get an ephemeral refusal, the request
 * message shows the decision, the parked turn resumes), typed answers, /new and
 * /status, and the start-up errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApprovalCustomId } from '../channels/discord/approvals.js';
import { plugin } from '../channels/discord/index.js';
import type { ListenContext } from '../src/channel/index.js';
import { instantiate } from '../src/channel/plugin.js';
import { createLogger } from '../src/log.js';
import { APP_ID, FakeDiscord, type FakeMessage } from './fakes/discord-server.js';
import { ALICE, APPROVE, BOB, GENERAL, OPEN, OPERATOR, OPS_ROLE, startWorld, type World } from './fakes/discord-world.js';
import { lastUserText } from './fakes/fake-llm.js';
import { eventually, startGateway, testConfig } from './support/gateway.js';

const EPHEMERAL = 64;
const DEFERRED_CHANNEL_MESSAGE = 5;
let w: World;

beforeAll(async () => {
  w = await startWorld();
});
afterAll(async () => {
  await w?.close();
});

const repliesTo = (channelId: string, messageId: string): FakeMessage[] =>
  w.fake.botMessages(channelId).filter((m) => m.message_reference?.message_id === messageId);

/** Asks for a command; resolves with the message carrying the buttons and the approval code. */
async function requestApproval(command: string, author = ALICE): Promise<{ userMessage: string; request: FakeMessage; code: string }> {
  const userMessage = w.fake.userMessage({ channelId: APPROVE, author, content: `run: ${command}` });
  // The buttons sit on the last part of the reply.
  const request = await eventually(async () => {
    const first = repliesTo(APPROVE, userMessage)[0];
    return first && w.fake.botMessages(APPROVE).find((m) => BigInt(m.id) >= BigInt(first.id) && m.components.length > 0);
  });
  const ids = (request.components as Array<{ components: Array<{ custom_id: string }> }>).flatMap((r) => r.components.map((c) => c.custom_id));
  const code = parseApprovalCustomId(ids[0]!)!.code;
  // The turn is parked once the request is shown.
  await eventually(async () => (await w.gw.infra.approvals.byCode(code))?.status === 'pending');
  return { userMessage, request, code };
}

const button = (request: FakeMessage, decision: string) =>
  (request.components as Array<{ components: Array<{ custom_id: string }> }>).flatMap((r) => r.components).find((c) => c.custom_id.includes(`:${decision}:`))!
    .custom_id;

describe('discord approvals', () => {
  it('buttons carry the code; a non-operator is refused ephemerally; an operator decides and the turn resumes', async () => {
    const { fake } = w;
    const { userMessage, request, code } = await requestApproval('echo hi >> out.txt');
    expect(request.content).toContain(code);
    expect(button(request, 'approve')).toBe(`sb-approval:approve:${code}`);
    const deny = button(request, 'deny');
    expect(deny).toBe(`sb-approval:deny:${code}`);

    // Bob is no operator: only he is told, and nothing is decided.
    const refused = fake.clickButton({ messageId: request.id, customId: button(request, 'approve'), user: BOB });
    const refusal = await eventually(async () => fake.repliesTo(refused)[0]);
    expect(refusal.type).toBe(4);
    expect(refusal.data.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(refusal.data.content).toMatch(/Only an operator/);
    expect((await w.gw.infra.approvals.byCode(code))!.status).toBe('pending');
    expect(fake.messages.get(request.id)!.components.length).toBeGreaterThan(0);

    // The operator approves: the request message shows who and when, without buttons.
    const approve = button(request, 'approve');
    const approved = fake.clickButton({ messageId: request.id, customId: approve, user: OPERATOR });
    const update = await eventually(async () => fake.repliesTo(approved)[0]);
    expect(update.type).toBe(7);
    const shown = fake.messages.get(request.id)!;
    expect(shown.content).toContain(`✅ **${code}** approved by <@${OPERATOR.id}>`);
    expect(shown.content).toMatch(/<t:\d+:f>/);
    expect(shown.components).toEqual([]);

    // The parked turn resumes and its continuation is a new reply.
    await w.answered(userMessage);
    const replies = repliesTo(APPROVE, userMessage);
    expect(replies).toHaveLength(2);
    expect(replies[1]!.content).toMatch(/tool said: .*exit code 0/);
    expect(await w.gw.infra.approvals.byCode(code)).toMatchObject({ status: 'executed', decidedVia: 'discord', decidedBy: `discord:${OPERATOR.id}` });

    // A late click on the decided request only restates the decision.
    const late = fake.clickButton({ messageId: request.id, customId: deny, user: OPERATOR });
    await eventually(async () => fake.repliesTo(late)[0]);
    expect(fake.messages.get(request.id)!.content).toMatch(/already approved/);
  });

  it('an operator role decides too; a refusal is shown and the model is told', async () => {
    const { fake } = w;
    const { userMessage, request, code } = await requestApproval('echo no >> denied.txt');
    const click = fake.clickButton({ messageId: request.id, customId: button(request, 'deny'), user: BOB, roles: [OPS_ROLE] });
    await eventually(async () => fake.repliesTo(click)[0]);
    expect(fake.messages.get(request.id)!.content).toContain(`❌ **${code}** refused by <@${BOB.id}>`);
    await w.answered(userMessage);
    expect(repliesTo(APPROVE, userMessage)[1]!.content).toMatch(/Not approved/);
  });

  it('an answer typed in a channel ("yes CODE") needs no mention', async () => {
    // Chatter that only looks like an answer is not one.
    const chatter = w.fake.userMessage({ channelId: GENERAL, author: BOB, content: 'no mercy' });
    const { userMessage, request, code } = await requestApproval('echo typed >> typed.txt');
    const typed = w.fake.userMessage({ channelId: GENERAL, author: OPERATOR, content: `yes ${code}` });
    const reply = await eventually(async () => repliesTo(GENERAL, typed)[0]);
    expect(reply.content).toMatch(new RegExp(`${code} approved`));
    await w.answered(userMessage);
    expect(repliesTo(APPROVE, userMessage)[1]!.content).toMatch(/exit code 0/);
    expect(repliesTo(GENERAL, chatter)).toEqual([]);
    expect(await w.inboxRows(chatter)).toEqual([]);
    // Decided without a click: the resumed turn takes the stale buttons off the request.
    expect(w.fake.messages.get(request.id)!.components).toEqual([]);
  });
});

describe('discord slash commands', () => {
  it('registers /new and /status', async () => {
    const put = await eventually(async () => w.fake.registeredCommands[0]);
    expect(put.path).toBe(`/applications/${APP_ID}/commands`);
    expect((put.body as Array<{ name: string }>).map((c) => c.name)).toEqual(['new', 'status']);
  });

  it('/new starts a fresh conversation for the channel; /status says which', async () => {
    const { fake } = w;
    const first = fake.userMessage({ channelId: OPEN, author: ALICE, content: 'remember the word pineapple' });
    await w.answered(first);
    const oldKey = await w.conversationKey(first);

    const slash = fake.slashCommand({ channelId: OPEN, name: 'new', user: ALICE });
    // Deferred at once (type 5, for everyone in the channel to see), then the deferred response edited.
    const ack = await eventually(async () => fake.repliesTo(slash)[0]);
    expect(ack.type).toBe(DEFERRED_CHANNEL_MESSAGE);
    const shown = await eventually(async () => (fake.responseShown(slash)?.thinking === false ? fake.responseShown(slash) : undefined));
    expect(shown).toMatchObject({ ephemeral: false, content: expect.stringMatching(/new conversation/i) });

    const second = fake.userMessage({ channelId: OPEN, author: ALICE, content: 'what was the word' });
    await w.answered(second);
    const newKey = await w.conversationKey(second);
    expect(newKey).not.toBe(oldKey);
    expect(newKey).toContain(`~g${slash}`);
    // The model saw none of the old conversation.
    const call = [...w.primary.requests, ...w.backup.requests].find((r) => lastUserText(r.body) === 'what was the word')!;
    expect(JSON.stringify(call.body.messages)).not.toContain('pineapple');

    const status = fake.slashCommand({ channelId: OPEN, name: 'status', user: ALICE });
    const deferred = await eventually(async () => fake.repliesTo(status)[0]);
    expect(deferred.type).toBe(DEFERRED_CHANNEL_MESSAGE);
    expect(deferred.data.flags & EPHEMERAL).toBe(EPHEMERAL);
    const report = await eventually(async () => (fake.responseShown(status)?.thinking === false ? fake.responseShown(status) : undefined));
    expect(report.ephemeral).toBe(true);
    expect(report.content).toContain(newKey);
    expect(report.content).toMatch(/^Connected/);
    expect(fake.lateResponses).toBe(0);
  });

  it('/new answers within the 3-second interaction deadline while the store is slow', async () => {
    const { fake } = w;
    // The embedded database held by a long transaction: every store query waits for it (PGlite runs one at a time).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const holding = w.gw.infra.store.db.transaction(async (tx) => {
      await tx.query('select 1');
      await held;
    });
    const releaseTimer = setTimeout(release, 4_000);
    try {
      const started = Date.now();
      const slash = fake.slashCommand({ channelId: OPEN, name: 'new', user: BOB });
      const ack = await eventually(async () => fake.repliesTo(slash)[0], 3_000);
      expect(ack.type).toBe(DEFERRED_CHANNEL_MESSAGE);
      const shown = await eventually(async () => (fake.responseShown(slash)?.thinking === false ? fake.responseShown(slash) : undefined), 15_000);
      expect(shown.content).toMatch(/new conversation/i);
      // The answer really waited for the store, past the deadline a direct reply would have missed.
      expect(Date.now() - started).toBeGreaterThan(3_000);
      expect(fake.lateResponses).toBe(0);
    } finally {
      clearTimeout(releaseTimer);
      release();
      await holding;
    }
  });
});

describe('discord start-up errors', () => {
  it('bad configuration names the key', async () => {
    await expect(startGateway(testConfig(null, {}, { channels: { discord: { editIntervalMs: 5 } } }))).rejects.toThrow(/channels\.discord\.editIntervalMs/);
    await expect(startGateway(testConfig(null, {}, { channels: { discord: { botTokenEnv: 'SB_NO_SUCH_DISCORD_TOKEN' } } }))).rejects.toThrow(
      /SB_NO_SUCH_DISCORD_TOKEN/,
    );
  });

  it('a refused token or a missing Message Content intent stops the listener from starting, saying why', async () => {
    const fake = await new FakeDiscord().start();
    const ctx = { log: createLogger('silent'), state: w.gw.infra.channelState, config: w.gw.config } as unknown as ListenContext;
    try {
      fake.refuseToken = 'revoked-token';
      const revoked = instantiate(plugin, { apiBaseUrl: fake.apiUrl, botTokenEnv: 'SB_REVOKED_DISCORD_TOKEN' }, { SB_REVOKED_DISCORD_TOKEN: 'revoked-token' })
        .listener!;
      await expect(revoked.start(ctx)).rejects.toThrow(/SB_REVOKED_DISCORD_TOKEN.*refused/);
      expect(revoked.health()).toMatchObject({ ok: false });
      await revoked.close();
      // The privileged intent not enabled in the Developer Portal: the gateway closes with 4014.
      fake.closeOnIdentify = 4014;
      const deaf = instantiate(plugin, { apiBaseUrl: fake.apiUrl }, { DISCORD_BOT_TOKEN: 'good-token' }).listener!;
      await expect(deaf.start(ctx)).rejects.toThrow(/Message Content intent/);
      expect(deaf.health().message).toMatch(/Message Content/);
      await deaf.close();
    } finally {
      await fake.close();
    }
  });
});
