import { z } from 'zod';

/**
 * "Is this message addressed to me?" over platform-neutral facts: each channel computes the facts
 * from its own payload (mentions, the message replied to, the thread, the sender), this decides.
 * Pure: no I/O, no clock. RoomManners (src/ingress/room-manners.ts) adds what needs state (the
 * bot-to-bot loop guard, the ambient budget) on top.
 */

export const RESPOND_IN = ['mentions', 'threads', 'all'] as const;
export type RespondIn = (typeof RESPOND_IN)[number];

const botName = z.string().trim().min(1).max(64);

/**
 * channels.<name>.groups: manners in rooms (channels, guild channels, group threads); DMs are
 * always answered. `respondIn`'s default is the channel's own (today's behaviour there).
 */
export function groupsSchema(defaults: { respondIn: RespondIn }) {
  return z
    .object({
      /** mentions: only a mention, a reply to the bot or its name; threads: also every message of a thread the bot is in; all: every message. */
      respondIn: z.enum(RESPOND_IN).default(defaults.respondIn),
      /** The bot's name at the start of a line addresses it: true = its name on the platform, a list = these names, false = off. */
      nameTrigger: z.union([z.boolean(), z.array(botName).max(20)]).default(true),
      /** Other bots (platform ids) whose messages may be answered; every other bot is ignored. */
      allowBots: z.array(z.string().trim().min(1).max(64)).max(100).default([]),
      /** At most this many answers to other bots per room and minute (the loop guard). */
      botLoopPerMinute: z.number().int().min(0).max(60).default(3),
      /** Unprompted replies per room and hour (ambient mode; 0: off). Needs classifierSlot. */
      ambientPerHour: z.number().int().min(0).max(60).default(0),
      /** The provider slot (providers[].id, a cheap model) asked YES/NO whether to chime in. */
      classifierSlot: z.string().trim().min(1).max(64).optional(),
    })
    .strict()
    .refine((g) => g.ambientPerHour === 0 || g.classifierSlot !== undefined, {
      message: 'ambientPerHour needs classifierSlot (the provider slot that decides when to chime in)',
      path: ['classifierSlot'],
    })
    .prefault({});
}

export type GroupsPolicy = z.infer<ReturnType<typeof groupsSchema>>;

/** What a channel knows about one message, in platform-neutral words. */
export interface AddressFacts {
  /** A direct message (a DM, a one-to-one mail): always addressed. */
  isDirect: boolean;
  /** The bot itself is mentioned (<@U…>, <@id>, the bot alone in To). */
  mentionsBot: boolean;
  /** A role that stands for the bot (Discord's managed role) is mentioned. */
  mentionsBotRole?: boolean;
  /** The message replies to one of the bot's messages. */
  replyToBot?: boolean;
  /** The message is in a thread the bot is part of. */
  inBotThread?: boolean;
  /** Someone other than the bot is mentioned (or the reply is to someone else). */
  mentionsOthers?: boolean;
  /** A line of the text starts with the bot's name (see nameAtLineStart). */
  startsWithBotName?: boolean;
  /** Sent by another bot: its platform ids (a Slack bot has a bot id and a user id). */
  fromBot?: { ids: readonly string[] };
}

export type AddressedWhy = 'direct' | 'mention' | 'role' | 'reply' | 'name' | 'thread' | 'all';
export type NotAddressedWhy = 'bot' | 'someone_else' | 'not_addressed';

export type Addressed = { addressed: true; why: AddressedWhy } | { addressed: false; why: NotAddressedWhy };

export function addressedToMe(facts: AddressFacts, policy: Pick<GroupsPolicy, 'respondIn' | 'nameTrigger' | 'allowBots'>): Addressed {
  if (facts.fromBot && !facts.fromBot.ids.some((id) => policy.allowBots.includes(id))) return { addressed: false, why: 'bot' };
  if (facts.isDirect) return { addressed: true, why: 'direct' };
  if (facts.mentionsBot) return { addressed: true, why: 'mention' };
  if (facts.mentionsBotRole) return { addressed: true, why: 'role' };
  if (facts.replyToBot) return { addressed: true, why: 'reply' };
  if (policy.nameTrigger !== false && facts.startsWithBotName) return { addressed: true, why: 'name' };
  if (facts.mentionsOthers) return { addressed: false, why: 'someone_else' };
  if (policy.respondIn === 'all') return { addressed: true, why: 'all' };
  if (policy.respondIn === 'threads' && facts.inBotThread) return { addressed: true, why: 'thread' };
  return { addressed: false, why: 'not_addressed' };
}

/** The names that address the bot at a line's start: the platform's names (nameTrigger true), the configured ones, or none. */
export function botNames(policy: Pick<GroupsPolicy, 'nameTrigger'>, platformNames: ReadonlyArray<string | null | undefined>): string[] {
  if (policy.nameTrigger === false) return [];
  const names = policy.nameTrigger === true ? platformNames : policy.nameTrigger;
  return [...new Set(names.map((n) => (n ?? '').trim()).filter((n) => n.length > 0 && n.length <= 64))];
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether a line starts with one of the names ("Switchboard, …", "@switchboard: …", "hey switchboard"
 * does not count), case-insensitive, the name ending at a word boundary ("switchboards" does not count).
 * Only the first 100 lines and 500 characters of each are looked at: a long paste costs no more.
 */
export function nameAtLineStart(text: string, names: readonly string[]): boolean {
  if (!names.length) return false;
  const re = new RegExp(`^[ \\t>*_~]*@?(?:${names.map(escapeRegex).join('|')})(?![\\p{L}\\p{N}_])`, 'iu');
  return text.split('\n', 100).some((line) => re.test(line.slice(0, 500)));
}

/** Why a room message is left unanswered (the reason label of switchboard_room_messages_ignored_total). */
export type IgnoreReason = NotAddressedWhy | 'bot_loop' | 'ambient_budget' | 'ambient_in_a_row' | 'ambient_declined' | 'busy';

/** ListenContext.shouldAnswer's answer: `ambient` is an unprompted reply the classifier approved. */
export type RoomDecision = { answer: true; why: AddressedWhy | 'ambient' } | { answer: false; why: IgnoreReason };

/** ListenContext.shouldAnswer's question. */
export interface RoomQuestion {
  /** The room, as the channel names it (a Slack channel, a Discord channel or thread, a mail thread). */
  room: string;
  facts: AddressFacts;
  policy: GroupsPolicy;
  /** The message's text: what the classifier sees in ambient mode. */
  text: string;
  /** The platform's message id: the same message asked twice (a retry, Slack's app_mention + message pair) counts once. */
  messageId?: string;
}
