import type { Attachment } from '../../kernel/envelope.js';
import { slackToPlain } from './format.js';

export interface BotIdentity {
  userId: string;
  /** The bot user's name (auth.test `user`): what nameTrigger matches at a line's start. */
  name?: string;
  botId?: string;
  teamId?: string;
}

/** Where the answer goes: InboundMessage.replyTo for this channel. */
export interface SlackReplyTo {
  channel: string;
  /** The thread to answer in; absent for a top-level DM (answered at top level). */
  thread_ts?: string;
  /** The message being answered. */
  ts: string;
  /** The sender's team (native streaming names its recipient: this user of this team). */
  team?: string;
  /** The sender (native streaming outside DMs names its recipient). */
  user: string;
  dm: boolean;
}

export interface Taken {
  kind: 'take';
  externalId: string;
  channel: string;
  /**
   * The workspace the channel is seen from: the event envelope's team (team_id, else
   * authorizations[0].team_id), the same for every member of a Slack Connect or org-wide channel.
   * The conversation key's workspace.
   */
  team?: string;
  /** The sender's own team (user_team, else team): part of who they are (access, operators). */
  senderTeam?: string;
  user: string;
  ts: string;
  /** The conversation's thread: DMs only when the message is in one; channels always (a mention starts one). */
  thread?: string;
  dm: boolean;
  mention: boolean;
  /** A channel message in a thread without a mention: answered (respondIn threads) only if the bot is in that thread. */
  needsThread: boolean;
  /** Another user (<@U…>) or a user group (<!subteam^…>) is mentioned. */
  mentionsOthers: boolean;
  /** Sent by another bot: its bot id and user id (both are what groups.allowBots may list). */
  fromBot?: string[];
  edited: boolean;
  text: string;
  attachments: Attachment[];
  replyTo: SlackReplyTo;
}

export type Classified = Taken | { kind: 'ignore'; reason: string };

const TAKEN_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast', 'me_message', 'bot_message']);

/** Slack's own system user (Slackbot DMs, "archived the channel" notices): never answered. */
const SLACK_SYSTEM_USERS = new Set(['USLACKBOT', 'USLACK']);

interface SlackFile {
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  permalink?: string;
}

export interface SlackMessage {
  type?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  client_msg_id?: string;
  /** The sender's team (in a shared channel: a partner's own team). */
  team?: string;
  /** Shared channels: the sender's team and the team the message came from. */
  user_team?: string;
  source_team?: string;
  channel?: string;
  channel_type?: string;
  files?: SlackFile[];
  message?: SlackMessage;
  previous_message?: SlackMessage;
}

/**
 * Decides what a `message` or `app_mention` event is to the bot, without I/O:
 * the bot's own messages are ignored; everything else is taken with what
 * addresses it (a mention, a DM, a thread, someone else mentioned, another bot
 * as the sender) for the caller to ask ctx.shouldAnswer. In channels the answer
 * goes to the message's thread (a top-level message starts one: the conversation). Edits: the edited message is classified like a
 * new one under the ORIGINAL message's id, so an edit of a message already
 * taken is a duplicate (ignored), and an edit that adds a mention is taken.
 * Deletions are ignored (a deleted message already taken is still answered).
 * Slackbot (USLACKBOT) and system subtypes (joins, archives…) are ignored.
 * `teamId` is the event envelope's team (the workspace the channel is seen from).
 */
export function classify(ev: SlackMessage, teamId: string | undefined, bot: BotIdentity): Classified {
  let m = ev;
  let edited = false;
  if (ev.subtype === 'message_deleted') return { kind: 'ignore', reason: 'deleted' };
  if (ev.subtype === 'message_changed') {
    if (!ev.message) return { kind: 'ignore', reason: 'edit without a message' };
    if (ev.message.subtype === 'tombstone') return { kind: 'ignore', reason: 'deleted thread root' };
    if (ev.previous_message && ev.previous_message.text === ev.message.text) return { kind: 'ignore', reason: 'edit without a text change' };
    m = { ...ev.message, channel: ev.channel, channel_type: ev.channel_type };
    edited = true;
  }
  if ((m.user && m.user === bot.userId) || (bot.botId && m.bot_id === bot.botId)) return { kind: 'ignore', reason: 'own message' };
  if (!TAKEN_SUBTYPES.has(m.subtype)) return { kind: 'ignore', reason: `subtype ${m.subtype}` };
  if (m.user && SLACK_SYSTEM_USERS.has(m.user)) return { kind: 'ignore', reason: 'slackbot' };
  const channel = m.channel ?? ev.channel;
  const sender = m.user ?? m.bot_id;
  if (!sender || !channel || !m.ts) return { kind: 'ignore', reason: 'no sender, channel or ts' };
  const fromBot = m.bot_id || m.subtype === 'bot_message' ? [m.bot_id, m.user].filter((x): x is string => !!x) : undefined;
  const dm = m.channel_type === 'im' || (m.channel_type === undefined && channel.startsWith('D'));
  const mention = ev.type === 'app_mention' || (!!bot.userId && (m.text ?? '').includes(`<@${bot.userId}`));
  const inThread = !!m.thread_ts && m.thread_ts !== m.ts;
  const raw = m.text ?? '';
  const mentionsOthers = [...raw.matchAll(/<@([UW][A-Z0-9]+)[|>]/g)].some((x) => x[1] !== bot.userId && x[1] !== sender) || raw.includes('<!subteam^');
  const text = slackToPlain(m.text ?? '', bot.userId);
  const attachments = (m.files ?? []).map(fileToAttachment);
  if (!text && !attachments.length) return { kind: 'ignore', reason: 'empty' };
  // The envelope's team keys the conversation (one thread, one conversation, whoever writes in it);
  // the sender keeps their own team. They differ only in shared channels.
  const senderTeam = m.user_team ?? m.team ?? teamId ?? bot.teamId;
  const team = teamId ?? bot.teamId ?? senderTeam;
  const thread = dm ? (inThread ? m.thread_ts : undefined) : (m.thread_ts ?? m.ts);
  return {
    kind: 'take',
    externalId: m.client_msg_id ?? `${channel}:${m.ts}`,
    channel,
    ...(team ? { team } : {}),
    ...(senderTeam ? { senderTeam } : {}),
    user: sender,
    ts: m.ts,
    ...(thread ? { thread } : {}),
    dm,
    mention,
    needsThread: !dm && !mention && inThread,
    mentionsOthers,
    ...(fromBot ? { fromBot } : {}),
    edited,
    text,
    attachments,
    replyTo: { channel, ...(thread ? { thread_ts: thread } : {}), ts: m.ts, ...(senderTeam ? { team: senderTeam } : {}), user: sender, dm },
  };
}

function fileToAttachment(f: SlackFile): Attachment {
  return {
    name: f.name ?? f.title ?? 'file',
    ...(f.mimetype ? { contentType: f.mimetype } : {}),
    ...(typeof f.size === 'number' ? { size: f.size } : {}),
    ...(f.url_private || f.permalink ? { url: (f.url_private ?? f.permalink)! } : {}),
  };
}
