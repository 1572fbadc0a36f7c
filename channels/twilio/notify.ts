import type { Logger } from 'pino';
import type { MessagesApi, OutgoingMessage } from './client.js';
import { sendWithRetry, type TwilioChannel } from './send.js';
import { splitMessage } from './split.js';

export interface OperatorTextOptions {
  channel: TwilioChannel;
  maxMessageChars: number;
  attempts: number;
  baseMs: number;
  maxMs: number;
  log: Logger;
}

/**
 * Texts an operator number (takeover.operatorChannel on sms or whatsapp: a request for a human, or
 * a user's message as "#<ref> <text>" while their conversation is taken over). Plain text, split at
 * maxMessageChars; transient failures retried. Throws when it cannot be sent: the caller (the
 * HandoffService) logs it, and the message stays in the conversation's transcript.
 */
export async function textOperator(
  sender: MessagesApi,
  to: string,
  from: Pick<OutgoingMessage, 'from' | 'messagingServiceSid'> | null,
  text: string,
  opts: OperatorTextOptions,
): Promise<void> {
  if (!from) throw new Error(`${opts.channel}: no address to text operators from (a target "to|from", channels.${opts.channel}.from, or messagingServiceSid)`);
  for (const body of splitMessage(text, opts.maxMessageChars)) {
    const r = await sendWithRetry(
      sender,
      { to, ...from, body },
      { channel: opts.channel, attempts: opts.attempts, baseMs: opts.baseMs, maxMs: opts.maxMs, log: opts.log },
    );
    if (!r.ok) throw new Error(`${opts.channel}: the operator number could not be texted: ${r.failure.message}`);
  }
}
