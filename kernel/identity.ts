/**
 * Who someone is: one person on one channel. An identity is stored and
 * compared as a whole, in its one canonical string form; the same id on two
 * channels (a Slack user id sent as a webhook's `sender`, a phone number, an
 * email address) is two people. Linking one person's identities across
 * channels is not done here.
 *
 * Canonical form: `<channel>:<id>`, or `<channel>:<workspace>:<id>` for the
 * channels whose user ids are unique only within a workspace
 * (WORKSPACE_CHANNELS: Slack, whose ids belong to a team). The id is the rest
 * of the string and may hold colons (webhook senders are `<hook>:<sender>`,
 * unauthenticated email senders `unverified:<address>`); the workspace has
 * `%` and `:` escaped, and `-` stands for an unknown one.
 *
 *   slack:T0123:U0456        a Slack user of team T0123
 *   discord:80351110224678912   a Discord user (ids are global: no guild)
 *   sms:+15551234567         a phone number (Twilio WhatsApp: sms:whatsapp:+1555…)
 *   email:alice@example.com  an authenticated From; email:unverified:… otherwise
 *   webhook:crm:alice        the sender "alice" of the hook "crm"; webhook:crm for the hook itself
 *   http:3f2a…               an API key's hash id (op:… for an operator key)
 *   mcp:op:3f2a…             an operator through the MCP server
 */
export interface Identity {
  channel: string;
  /** The platform's workspace, for channels in WORKSPACE_CHANNELS (Slack: the team id). */
  workspace?: string;
  id: string;
}

/** Channels whose user ids are unique only within a workspace: their identities carry it. */
export const WORKSPACE_CHANNELS: ReadonlySet<string> = new Set(['slack']);

/** The workspace part of an identity whose workspace is not known. */
export const UNKNOWN_WORKSPACE = '-';

const CHANNEL = /^[a-z][a-z0-9_-]*$/;

const escapeWorkspace = (s: string) => (s === UNKNOWN_WORKSPACE ? '%2D' : s.replace(/%/g, '%25').replace(/:/g, '%3A'));
const unescapeWorkspace = (s: string) => s.replace(/%(25|3A|2D)/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)));

export function hasWorkspace(channel: string): boolean {
  return WORKSPACE_CHANNELS.has(channel);
}

/** The identity's form within its channel: `<id>`, or `<workspace>:<id>` where the channel has workspaces. */
export function localId(i: Identity): string {
  if (!CHANNEL.test(i.channel)) throw new Error(`identity: bad channel name ${JSON.stringify(i.channel)}`);
  if (!i.id) throw new Error(`identity: empty id on channel ${i.channel}`);
  if (!hasWorkspace(i.channel)) return i.id;
  return `${i.workspace ? escapeWorkspace(i.workspace) : UNKNOWN_WORKSPACE}:${i.id}`;
}

/** The canonical string form (see the top of this file). A workspace on a channel without workspaces is ignored. */
export function formatIdentity(i: Identity): string {
  return `${i.channel}:${localId(i)}`;
}

/** An identity from its canonical form, or undefined when the string is not one. */
export function parseIdentity(s: string): Identity | undefined {
  const c = s.indexOf(':');
  if (c <= 0) return undefined;
  const channel = s.slice(0, c);
  if (!CHANNEL.test(channel)) return undefined;
  return parseLocal(channel, s.slice(c + 1));
}

/** An identity from its channel and its local form (see localId), or undefined when that is not one. */
export function parseLocal(channel: string, local: string): Identity | undefined {
  if (!CHANNEL.test(channel)) return undefined;
  if (!hasWorkspace(channel)) return local ? { channel, id: local } : undefined;
  const w = local.indexOf(':');
  if (w <= 0) return undefined;
  const id = local.slice(w + 1);
  if (!id) return undefined;
  const raw = local.slice(0, w);
  return raw === UNKNOWN_WORKSPACE ? { channel, id } : { channel, workspace: unescapeWorkspace(raw), id };
}

/** The sender of an inbound message, as an identity. */
export function identityOf(msg: { channel: string; sender: { id: string; workspace?: string | undefined } }): Identity {
  const { channel, sender } = msg;
  return hasWorkspace(channel) && sender.workspace ? { channel, workspace: sender.workspace, id: sender.id } : { channel, id: sender.id };
}

export function sameIdentity(a: Identity, b: Identity): boolean {
  return formatIdentity(a) === formatIdentity(b);
}

/**
 * Whether an entry of a per-channel list in the configuration (`approvals.operators.<channel>`,
 * `access.<channel>.allow`) or an access row names this identity: its local form
 * (`T0123:U0456` on Slack), or, where the channel has workspaces, the bare user id
 * (`U0456`: that user in whichever workspace the channel's app is in). The list's
 * channel must be the identity's channel; the caller picks the list by it.
 */
export function entryNames(entry: string, i: Identity): boolean {
  return entry === localId(i) || (hasWorkspace(i.channel) && entry === i.id);
}

/** The local forms an entry may take for this identity (see entryNames), most specific first. */
export function entryForms(i: Identity): string[] {
  const local = localId(i);
  return hasWorkspace(i.channel) && local !== i.id ? [local, i.id] : [local];
}
