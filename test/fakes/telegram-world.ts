/**
 * A Telegram test world: the fake Bot API, two fake LLMs as a fallback chain, and a real embedded
 * gateway with the telegram channel (the real grammY client) pointed at the fake.
 */
import { createServer } from 'node:net';
import type { Gateway } from '../../app/gateway.js';
import type { TelegramListener } from '../../channels/telegram/listen.js';
import type { Config } from '../../src/config.js';
import { eventually, startGateway, testConfig } from '../support/gateway.js';
import { agentLike } from './discord-world.js';
import { FakeLlm } from './fake-llm.js';
import { BOT_TOKEN, FakeTelegram, type TgChat, type TgUser } from './telegram-server.js';

export const ALICE: TgUser = { id: 1001, first_name: 'Alice', username: 'alice' };
export const BOB: TgUser = { id: 1002, first_name: 'Bob' };
export const OPERATOR: TgUser = { id: 1009, first_name: 'Olga', username: 'olga' };
export const OTHER_BOT: TgUser = { id: 7777, first_name: 'Other', username: 'other_bot', is_bot: true };

export const DM_ALICE: TgChat = { id: ALICE.id, type: 'private' };
export const DM_BOB: TgChat = { id: BOB.id, type: 'private' };
export const DM_OPERATOR: TgChat = { id: OPERATOR.id, type: 'private' };
export const GROUP: TgChat = { id: -1001000000001, type: 'supergroup', title: 'team' };
/** Mention not required here. */
export const OPEN_GROUP: TgChat = { id: -1001000000002, type: 'supergroup', title: 'open' };
export const FORUM: TgChat = { id: -1001000000003, type: 'supergroup', title: 'forum', is_forum: true };
export const CHATS = [DM_ALICE, DM_BOB, DM_OPERATOR, GROUP, OPEN_GROUP, FORUM];

export const WEBHOOK_SECRET = 'test-webhook-secret-0123456789';

export interface TelegramWorld {
  fake: FakeTelegram;
  llm: FakeLlm;
  gw: Gateway;
  cfg: Config;
  listener(): TelegramListener;
  inboxRows(updateId: number): Promise<Array<{ conversation_id: string; text: string; consumed_at: Date | null }>>;
  answered(updateId: number, timeoutMs?: number): Promise<void>;
  conversationKey(updateId: number): Promise<string>;
  /** Closes the gateway only (the fake and the model stay): downtime. */
  stop(): Promise<void>;
  /** Starts the gateway again on the same data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

export async function startTelegramWorld(
  telegram: Record<string, unknown> = {},
  opts: { webhook?: boolean; input?: string[]; attachments?: { maxImageBytes: number } } = {},
): Promise<TelegramWorld> {
  process.env.TELEGRAM_BOT_TOKEN = BOT_TOKEN;
  process.env.TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.FAKE_TELEGRAM_LLM = 'key-a';
  const fake = await new FakeTelegram().start();
  for (const c of CHATS) fake.addChat(c);
  const llm = new FakeLlm();
  await llm.start();
  llm.respond(agentLike);
  const port = opts.webhook ? await freePort() : 0;
  const cfg = testConfig(
    null,
    {},
    {
      ...(opts.webhook ? { http: { port } } : {}),
      providers: [
        {
          id: 'primary',
          api: 'openai-completions',
          model: 'fake-a',
          baseUrl: llm.openaiBaseUrl,
          apiKeyEnv: 'FAKE_TELEGRAM_LLM',
          ...(opts.input ? { input: opts.input } : {}),
        },
      ],
      ...(opts.attachments ? { attachments: opts.attachments } : {}),
      channels: {
        telegram: {
          apiRoot: fake.apiRoot,
          pollTimeoutSeconds: 2,
          chats: { [String(OPEN_GROUP.id)]: { requireMention: false } },
          ...(opts.webhook ? { publicUrl: `http://127.0.0.1:${port}` } : {}),
          ...telegram,
        },
      },
      access: { telegram: { policy: 'open' } },
      approvals: { operators: { telegram: [String(OPERATOR.id)] }, timeoutMs: 60_000 },
    },
  );
  let gw = await startGateway(cfg);
  const listener = () => gw.channels.find((c) => c.name === 'telegram')!.listener as unknown as TelegramListener;
  await eventually(async () => listener().health().ok, 15_000);
  const inboxRows = async (updateId: number) =>
    (
      await gw.infra.store.db.query<{ conversation_id: string; text: string; consumed_at: Date | null }>(
        `select conversation_id, text, consumed_at from inbox where channel = 'telegram' and external_id = $1`,
        [String(updateId)],
      )
    ).rows;
  let running = true;
  return {
    fake,
    llm,
    get gw() {
      return gw;
    },
    cfg,
    listener,
    inboxRows,
    async answered(updateId, timeoutMs = 20_000) {
      await eventually(async () => (await inboxRows(updateId))[0]?.consumed_at, timeoutMs);
    },
    async conversationKey(updateId) {
      const row = (await inboxRows(updateId))[0]!;
      return (await gw.infra.store.conversation(row.conversation_id))!.key;
    },
    async stop() {
      running = false;
      await gw.close();
    },
    async restart() {
      gw = await startGateway(cfg);
      running = true;
      await eventually(async () => listener().health().ok, 15_000);
    },
    async close() {
      if (running) await gw.close();
      await llm.close();
      await fake.close();
    },
  };
}
