/**
 * A whole Discord test world: the fake Discord (REST + gateway), two fake LLMs
 * as a fallback chain (primary, backup), and a real embedded gateway with the
 * discord channel configured against the fake.
 */
import type { Gateway } from '../../app/gateway.js';
import { eventually, startGateway, testConfig } from '../support/gateway.js';
import { FakeDiscord, type FakeUser } from './discord-server.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fake-llm.js';

export const GUILD = '700000000000000001';
export const GENERAL = '700000000000000010';
export const OPEN = '700000000000000011';
export const STREAM = '700000000000000012';
export const FENCES = '700000000000000013';
export const LIMITED = '700000000000000014';
export const RESET = '700000000000000015';
export const RESUME = '700000000000000016';
export const APPROVE = '700000000000000017';
/** Mention required and never mentioned: for driving the deliverer directly. */
export const RETRY = '700000000000000018';
export const THREAD = '700000000000000020';
export const DM = '700000000000000030';
export const OPS_ROLE = '700000000000000040';
/** The bot's managed role in GUILD (tags.bot_id = the bot). */
export const BOT_ROLE = '700000000000000041';

export const ALICE: FakeUser = { id: '600000000000000001', username: 'alice' };
export const BOB: FakeUser = { id: '600000000000000002', username: 'bob' };
export const OPERATOR: FakeUser = { id: '600000000000000009', username: 'olga' };
export const OTHER_BOT: FakeUser = { id: '600000000000000077', username: 'otherbot', bot: true };

/** 500 word tokens. */
export const LONG_500 = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ');

/** About 5,000 characters of prose and code fences (typescript, python, plain). */
export const FENCED = [
  'Here is the whole module, then a script, then notes.',
  '',
  '```typescript',
  ...Array.from({ length: 60 }, (_, i) => `export function step${i}(input: number): number { return input * ${i} + ${i % 7}; }`),
  '```',
  '',
  'And the Python side:',
  '',
  '```python',
  ...Array.from({ length: 30 }, (_, i) => `def helper_${i}(x):\n    return x ** ${i % 5} + ${i}`),
  '```',
  '',
  ...Array.from({ length: 12 }, (_, i) => `Note ${i}: the numbers above are illustrative and the code is not meant to run as is.`),
  '```',
  'plain block',
  '```',
].join('\n');

/** The fake model: commands to run become shell_exec calls; after a tool result it reports; keywords pick long replies. */
export function agentLike(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = lastUserText(req.body);
  const run = /run: (.+)$/m.exec(text);
  if (run) return toolCall('shell_exec', { command: run[1] });
  if (text.includes('long500quick')) return reply(LONG_500, 3);
  if (text.includes('long500')) return reply(LONG_500, 8);
  if (text.includes('fences')) return reply(FENCED);
  return reply(`echo: ${text}`);
}

export interface World {
  fake: FakeDiscord;
  primary: FakeLlm;
  backup: FakeLlm;
  gw: Gateway;
  close(): Promise<void>;
  /** Waits until the inbox row of a Discord message is consumed (its turn closed). */
  answered(messageId: string, timeoutMs?: number): Promise<void>;
  inboxRows(messageId: string): Promise<Array<{ conversation_id: string; attachments: unknown[]; text: string; consumed_at: Date | null }>>;
  conversationKey(messageId: string): Promise<string>;
}

export async function startWorld(
  discord: Record<string, unknown> = {},
  opts: { input?: string[]; attachments?: { maxImageBytes: number }; config?: Record<string, unknown> } = {},
): Promise<World> {
  process.env.DISCORD_BOT_TOKEN = 'fake-bot-token';
  process.env.FAKE_DISCORD_LLM_A = 'key-a';
  process.env.FAKE_DISCORD_LLM_B = 'key-b';
  const fake = await new FakeDiscord().start();
  fake.addGuild(
    GUILD,
    'Test guild',
    [GENERAL, OPEN, STREAM, FENCES, LIMITED, RESET, RESUME, APPROVE, RETRY].map((id, i) => ({ id, name: `chan-${i}` })),
    { threads: [{ id: THREAD, parent: GENERAL, name: 'a thread' }], roles: [{ id: OPS_ROLE, name: 'ops' }], botRole: BOT_ROLE },
  );
  fake.addDm(DM);
  const primary = new FakeLlm();
  const backup = new FakeLlm();
  await Promise.all([primary.start(), backup.start()]);
  primary.respond(agentLike);
  backup.respond(agentLike);
  const noMention = Object.fromEntries([OPEN, STREAM, FENCES, LIMITED, RESET, RESUME, APPROVE].map((id) => [id, { requireMention: false }]));
  const gw = await startGateway(
    testConfig(
      null,
      {},
      {
        providers: [
          {
            id: 'primary',
            api: 'openai-completions',
            model: 'fake-a',
            baseUrl: primary.openaiBaseUrl,
            apiKeyEnv: 'FAKE_DISCORD_LLM_A',
            ...(opts.input ? { input: opts.input } : {}),
          },
          { id: 'backup', api: 'openai-completions', model: 'fake-b', baseUrl: backup.openaiBaseUrl, apiKeyEnv: 'FAKE_DISCORD_LLM_B' },
        ],
        ...(opts.attachments ? { attachments: opts.attachments } : {}),
        channels: { discord: { apiBaseUrl: fake.apiUrl, channels: noMention, operatorRoles: [OPS_ROLE], commandGuildIds: [], ...discord } },
        access: { discord: { policy: 'open' } },
        approvals: { operators: { discord: [OPERATOR.id] }, timeoutMs: 60_000 },
        ...opts.config,
      },
    ),
  );
  const listener = gw.channels.find((c) => c.name === 'discord')!.listener!;
  await eventually(async () => listener.health().ok, 15_000);
  const db = gw.infra.store.db;
  const inboxRows = async (messageId: string) =>
    (
      await db.query<{ conversation_id: string; attachments: unknown[]; text: string; consumed_at: Date | null }>(
        `select conversation_id, attachments, text, consumed_at from inbox where channel = 'discord' and external_id = $1`,
        [messageId],
      )
    ).rows;
  return {
    fake,
    primary,
    backup,
    gw,
    inboxRows,
    async answered(messageId, timeoutMs = 20_000) {
      await eventually(async () => (await inboxRows(messageId))[0]?.consumed_at, timeoutMs);
    },
    async conversationKey(messageId) {
      const row = (await inboxRows(messageId))[0]!;
      return (await gw.infra.store.conversation(row.conversation_id))!.key;
    },
    async close() {
      await gw.close();
      await Promise.all([primary.close(), backup.close()]);
      await fake.close();
    },
  };
}
