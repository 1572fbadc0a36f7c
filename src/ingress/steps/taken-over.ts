import { formatIdentity } from '../../../kernel/identity.js';
import { HandoffError, IN_CHANNEL } from '../../handoffs/service.js';
import { NOTICE, type OperatorCommand } from '../../handoffs/text.js';
import type { IngressContext, IngressStep } from '../context.js';
import type { AnsweredOutcome } from '../outcome.js';
import { operatorCommandIn } from '../text-intent.js';

/** Channels whose authenticated senders are API-key principals: an operator key's id starts "op:" (src/http/auth.ts). */
const KEY_CHANNELS = new Set(['http', 'mcp']);

/**
 * Human takeover (src/handoffs/). While a conversation is taken over by an operator, or waits for
 * one (the agent asked with request_handoff), a user's message is recorded in the transcript and
 * passed on to the operators, and no turn is woken: no typing indicator, no model call. Its inbox
 * row (consumed at once) makes a redelivered event a no-op (the redelivery step replays it).
 *
 * In a chat thread (Slack, Discord, and the other chat channels) a configured operator
 * (approvals.operators) types "takeover" to take the conversation over and "handback [note]" to
 * return it; while they hold it, their other messages in the thread are the operator's messages
 * (the platform showed them to the user already). An operator's plain reply to a conversation
 * whose agent asked for a human takes it over too. Anyone else typing the commands is refused.
 *
 * An operator number (SMS, WhatsApp) relays with "#<conversation> …" (text-intent.ts, relay()
 * below); the user's messages reach it as "#<ref> <text>" when it is takeover.operatorChannel.
 */
export const takenOver: IngressStep = {
  name: 'taken over',
  async run(msg, ctx, next) {
    const handoffs = ctx.deps.handoffs;
    if (!handoffs) return next();
    const parsed = operatorCommandIn(msg, ctx);
    let open = ctx.before?.handoff ?? (ctx.before ? null : ((await ctx.deps.store.waitingCount(msg.conversationKey)).handoff ?? null));
    const operator = isOperator(msg.channel, ctx);
    const who = formatIdentity(ctx.sender);
    // "hand back my money" from a user is a message like any other, not an attempt: only the bare word is refused.
    const command = parsed && !operator && parsed.kind === 'handback' && parsed.note ? null : parsed;
    if (command) {
      if (!operator) {
        ctx.deps.log.info({ channel: msg.channel, sender: who, command: command.kind }, 'a non-operator tried to take over or hand back a conversation');
        return answered(NOTICE.refusedTakeover, false);
      }
      if (command.kind === 'relay') return relay(command, who, ctx);
      if (!open && command.kind === 'handback') return answered('This conversation is not taken over.', false);
      // The conversation may not exist yet: the operator's command is its first message.
      if (!open && !(await exists(ctx, msg.conversationKey))) return answered('There is nothing to take over here yet.', false);
      try {
        if (command.kind === 'takeover') {
          const h = await handoffs.take(msg.conversationKey, who);
          return answered(
            'You have taken over this conversation: the agent will not answer until you write "handback".',
            true,
            { id: h.id, state: 'taken' },
            true,
          );
        }
        const h = await handoffs.handback(msg.conversationKey, who, command.note);
        return answered('Handed back: the agent answers again from here.', true, { id: h.id, state: 'returned' }, true);
      } catch (err) {
        if (err instanceof HandoffError) return answered(err.message, false);
        throw err;
      }
    }
    // An operator's reply that takes over by itself (an email on the user's thread): taken first, then their message below.
    if (!open && operator && ctx.opts.takesOver && !KEY_CHANNELS.has(msg.channel) && (await exists(ctx, msg.conversationKey))) {
      try {
        const h = await handoffs.take(msg.conversationKey, who);
        open = { id: h.id, state: 'taken', conversationId: h.conversationId };
      } catch (err) {
        if (!(err instanceof HandoffError)) throw err;
        open = err.handoff && err.handoff.state === 'taken' ? { id: err.handoff.id, state: 'taken', conversationId: err.handoff.conversationId } : null;
      }
    }
    if (!open) return next();
    const inbox = {
      channel: msg.channel,
      externalId: msg.externalId,
      sender: msg.sender,
      senderIdentity: who,
      replyTo: msg.replyTo ?? null,
      receivedAt: msg.receivedAt,
    };
    // An operator writing in the chat's own thread: their message to the user (requested → taken first).
    if (operator && !KEY_CHANNELS.has(msg.channel)) {
      try {
        if (open.state === 'requested') await handoffs.take(msg.conversationKey, who);
        // Not shown to the user by the platform (an email to the bot alone): delivered, and the user's reply target stays theirs.
        const shown = ctx.opts.shownToUser;
        const r = await handoffs.say(msg.conversationKey, who, msg.text, shown === false ? { ...inbox, replyTo: null } : inbox, {
          ...(shown !== undefined ? { shown } : {}),
        });
        return answered('', true, { id: r.handoff.id, state: 'taken' }, true, r.duplicate);
      } catch (err) {
        // Another operator holds it: their message is shown in the thread all the same, recorded as theirs below.
        if (!(err instanceof HandoffError)) throw err;
      }
    }
    const conv = { key: msg.conversationKey, channel: msg.channel };
    const r = await handoffs.relayUser(open, conv, who, msg.text, inbox);
    // Handed back between our look and the write (the store orders the two): the agent answers it, as after the handback.
    if (r.closed) return next();
    const notice = open.state === 'taken' ? NOTICE.taken : NOTICE.requested;
    // The HTTP API answers every request with the notice; a chat is told once per handoff (and Slack and Discord threads not at all: the operator is there).
    const say = KEY_CHANNELS.has(msg.channel) || (r.first && !IN_CHANNEL.has(msg.channel)) ? notice : '';
    return answered(say, true, { id: open.id, state: open.state }, false, r.duplicate);
  },
};

/** An operator number's `#<conversation> …`: take it over, hand it back, or write to its user (delivered through its channel). */
async function relay(c: Extract<OperatorCommand, { kind: 'relay' }>, who: string, ctx: IngressContext): Promise<AnsweredOutcome> {
  const handoffs = ctx.deps.handoffs!;
  try {
    if (c.command.kind === 'takeover') {
      const h = await handoffs.take(c.ref, who);
      return answered(
        `Taken over ${h.conversationId}. Write "#${h.conversationId} <text>" to answer, "#${h.conversationId} handback" to return it.`,
        true,
        {
          id: h.id,
          state: 'taken',
        },
        true,
      );
    }
    if (c.command.kind === 'handback') {
      const h = await handoffs.handback(c.ref, who, c.command.note);
      return answered(`Handed ${h.conversationId} back to the agent.`, true, { id: h.id, state: 'returned' }, true);
    }
    const r = await handoffs.say(c.ref, who, c.command.text);
    return answered(
      `Sent to ${r.handoff.conversationId}${r.delivered ? '' : ' (in its transcript; its channel cannot be sent to)'}.`,
      true,
      { id: r.handoff.id, state: 'taken' },
      true,
    );
  } catch (err) {
    if (err instanceof HandoffError) return answered(err.message, false);
    throw err;
  }
}

function answered(reply: string, ok: boolean, handoff?: AnsweredOutcome['handoff'], byOperator = false, replayed = false): AnsweredOutcome {
  return {
    kind: 'answered',
    reply,
    ok,
    ...(handoff ? { handoff: { ...handoff, ...(byOperator ? { operator: true } : {}) } } : {}),
    ...(replayed ? { replayed: true as const } : {}),
  };
}

function exists(ctx: IngressContext, key: string): Promise<boolean> {
  return ctx.deps.handoffs!.conversation(key).then(
    () => true,
    () => false,
  );
}

function isOperator(channel: string, ctx: IngressContext): boolean {
  if (ctx.opts.operator === true) return true;
  if (ctx.opts.authenticated && KEY_CHANNELS.has(channel) && ctx.sender.id.startsWith('op:')) return true;
  return ctx.deps.approvals?.isOperator(ctx.sender) ?? false;
}
