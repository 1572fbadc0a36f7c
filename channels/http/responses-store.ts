import { createHash } from 'node:crypto';
import type { ChannelState } from '../../src/channel/index.js';
import type { OutputItem } from './responses-output.js';
import type { ResponsesRequest } from './responses-request.js';

/**
 * Stored responses (`store: true`, the default), in the channel's durable state: what GET
 * /v1/responses/{id} returns and what `previous_response_id` continues. A record belongs to the API
 * key that created it; another key finds nothing (404), as with conversations. Kept until DELETE.
 */
export interface StoredResponse {
  id: string;
  /** The API key's principal id (a hash of the key). */
  owner: string;
  /** The conversation name under the key, and its key. */
  conversation: string;
  conversationKey: string;
  inboxId: number;
  model: string;
  createdAt: number;
  status: 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed';
  instructions: string | null;
  previousResponseId: string | null;
  metadata: Record<string, string>;
  echo: ResponsesRequest['echo'];
  output: OutputItem[];
  usage: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  incompleteDetails: { reason: string } | null;
  switchboard: Record<string, unknown>;
}

const CHANNEL = 'http';
const recordKey = (id: string) => `response:${id}`;
/** The conversation's newest response: only it may be continued (a conversation has one line of history). */
const latestKey = (owner: string, conversation: string) => `response-latest:${createHash('sha256').update(`${owner}\0${conversation}`).digest('hex')}`;

export class ResponseStore {
  constructor(private readonly state: ChannelState) {}

  /** The record, only for its owner: another key's id is as unknown as a made-up one. */
  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    if (!/^resp_[A-Za-z0-9-]{8,64}$/.test(id)) return undefined;
    const r = await this.state.get<StoredResponse>(CHANNEL, recordKey(id));
    return r && r.owner === owner ? r : undefined;
  }

  async save(r: StoredResponse): Promise<void> {
    await this.state.set(CHANNEL, recordKey(r.id), r);
  }

  async delete(r: StoredResponse): Promise<void> {
    await this.state.delete(CHANNEL, recordKey(r.id));
  }

  async latest(owner: string, conversation: string): Promise<string | undefined> {
    return (await this.state.get<{ id: string }>(CHANNEL, latestKey(owner, conversation)))?.id;
  }

  async setLatest(owner: string, conversation: string, id: string): Promise<void> {
    await this.state.set(CHANNEL, latestKey(owner, conversation), { id });
  }
}
