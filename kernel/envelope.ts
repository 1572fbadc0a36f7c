/**
 * The one shape every channel normalizes its platform events into.
 * Everything after a channel's `listen` side sees only this.
 */
export interface Sender {
  /** The platform's id (user id, phone number, email address, API key hash), unique within the channel (and workspace). */
  id: string;
  /**
   * Where the platform's user ids are unique only within a workspace (Slack: the
   * team id), that workspace. With the channel it makes the sender's identity:
   * see kernel/identity.ts.
   */
  workspace?: string;
  name?: string;
}

export interface Attachment {
  name: string;
  contentType?: string;
  size?: number;
  url?: string;
  /**
   * The file's bytes, base64, for a small file the channel received inline and checked (an HTTP API
   * image: type by its magic bytes, size-limited). Kept with the message in the inbox; the stored
   * transcript names it instead of repeating it.
   */
  data?: string;
  /** Why the file is named but not shown (an image too large, not an image by its bytes, a failed download). */
  note?: string;
}

/** A message of the OpenAI-style request context, used by one-off HTTP conversations. */
export interface ContextMessage {
  role: 'system' | 'user' | 'assistant';
  text: string;
}

/**
 * Model-call settings a message asks for its own turn (the HTTP API's `temperature`,
 * `max_tokens`), validated by the channel; the turn caps maxTokens at the agent's.
 */
export interface TurnOverrides {
  temperature?: number;
  maxTokens?: number;
  /** JSON mode or a JSON schema for the answer (OpenAI's response_format / text.format), for slots that take it. */
  responseFormat?: ResponseFormat;
}

export type ResponseFormat =
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

export interface InboundMessage {
  channel: string;
  /** The platform's id for this event; (channel, externalId) is unique in the inbox. */
  externalId: string;
  /** Thread-aware: see conversationKey(). */
  conversationKey: string;
  sender: Sender;
  text: string;
  attachments: Attachment[];
  /** Channel-specific delivery target (thread ts, message id to reply to...). */
  replyTo?: Record<string, unknown>;
  receivedAt: Date;
  /** Owner principal of the conversation (HTTP: hash of the API key). */
  owner?: string;
  /** One-off conversations: the whole context sent with the request. */
  context?: ContextMessage[];
  /** Settings for the turn that answers this message (kept with it in the inbox, for any worker). */
  overrides?: TurnOverrides;
  /**
   * A hash of what the sender asked (the text and whatever changes the answer), for channels whose
   * senders choose the external id (HTTP's Idempotency-Key): the same id with another hash is refused.
   */
  requestHash?: string;
}

/**
 * channel + workspace/guild + chat + thread. Parts are escaped so that no two
 * different tuples produce the same key.
 */
export function conversationKey(parts: { channel: string; workspace?: string; chat: string; thread?: string }): string {
  const esc = (s: string) => s.replace(/%/g, '%25').replace(/\//g, '%2F');
  return [parts.channel, parts.workspace ?? '-', parts.chat, parts.thread ?? '-'].map(esc).join('/');
}
