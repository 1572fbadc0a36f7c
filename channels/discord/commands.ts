import {
  ApplicationCommandType,
  type ChatInputCommandInteraction,
  type Client,
  MessageFlags,
  type RESTPutAPIApplicationCommandsJSONBody,
  Routes,
} from 'discord.js';
import type { Logger } from 'pino';
import type { ListenContext } from '../../src/channel/index.js';
import { type DiscordPlace, type Generations, keyFor } from './conversations.js';

/** The slash commands: /new (a fresh conversation here) and /status (a short report). */
export const COMMANDS: RESTPutAPIApplicationCommandsJSONBody = [
  { name: 'new', description: 'Start a fresh conversation with the assistant here', type: ApplicationCommandType.ChatInput },
  { name: 'status', description: 'Show whether the assistant is connected and which conversation this is', type: ApplicationCommandType.ChatInput },
];

/** Registers the commands (globally, or in the given guilds: instant there). */
export async function registerCommands(client: Client<true>, guildIds: string[], log: Logger): Promise<void> {
  const appId = client.application.id;
  try {
    if (guildIds.length === 0) await client.rest.put(Routes.applicationCommands(appId), { body: COMMANDS });
    for (const g of guildIds) await client.rest.put(Routes.applicationGuildCommands(appId, g), { body: COMMANDS });
    log.info({ guilds: guildIds.length ? guildIds : 'global' }, 'slash commands registered');
  } catch (err) {
    log.warn({ err }, 'could not register the slash commands');
  }
}

async function placeOfInteraction(i: ChatInputCommandInteraction): Promise<DiscordPlace> {
  let ch = i.channel;
  if (!ch && i.guildId && i.channelId) ch = (await i.client.channels.fetch(i.channelId).catch(() => null)) as typeof ch;
  const parentId = ch && ch.isThread() ? ch.parentId : null;
  return { guildId: i.guildId ?? null, channelId: i.channelId, parentId };
}

/**
 * /new and /status. Discord refuses an interaction's first answer after 3 seconds (10062 Unknown
 * interaction), so the command is deferred (type 5, "thinking…"; ephemeral but for /new) before
 * anything touches the store, and the answer edits that deferred response. A refused /new takes
 * its public "thinking…" back and tells only the user.
 */
export async function handleCommand(
  i: ChatInputCommandInteraction,
  deps: { gens: Generations; ctx: Pick<ListenContext, 'checkAccess' | 'pendingApprovals'>; log: Logger },
): Promise<void> {
  const ephemeral = i.commandName !== 'new';
  await i.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {});
  const verdict = await deps.ctx.checkAccess({ channel: 'discord', id: i.user.id });
  if (!verdict.allowed) {
    const content = verdict.reply ?? 'Sorry, you may not use this assistant.';
    if (ephemeral) {
      await i.editReply({ content });
    } else {
      await i.deleteReply();
      await i.followUp({ content, flags: MessageFlags.Ephemeral });
    }
    return;
  }
  const place = await placeOfInteraction(i);
  if (i.commandName === 'new') {
    const key = await deps.gens.renew(place, i.id);
    deps.log.info({ key, user: i.user.id }, 'new conversation started with /new');
    await i.editReply({ content: 'Started a new conversation: what comes next here begins fresh.' });
    return;
  }
  if (i.commandName === 'status') {
    const ping = i.client.ws.ping;
    const pending = (await deps.ctx.pendingApprovals().catch(() => [])).filter((a) => a.channel === 'discord').length;
    const gen = await deps.gens.generation(place);
    const since = gen && /^\d+$/.test(gen) ? ` (started fresh <t:${Math.floor(Number((BigInt(gen) >> 22n) + 1420070400000n) / 1000)}:R>)` : '';
    await i.editReply({
      content: `Connected${ping >= 0 ? ` (gateway ping ${ping} ms)` : ''}. This conversation: \`${keyFor(place, gen)}\`${since}. Approvals waiting: ${pending}.`,
    });
    return;
  }
  await i.editReply({ content: `Unknown command /${i.commandName}.` });
}
