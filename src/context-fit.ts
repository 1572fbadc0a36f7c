import type { Context, Message } from '@mariozechner/pi-ai';
import { estimateTokens, requestTokens } from './token-estimate.js';

/**
 * Every request fits the window of the slot it is sent to. The budget is the
 * window less the room for the answer (the request's maxTokens, itself at most
 * ANSWER_SHARE of the window) and a margin for the rough estimate; a request
 * over it loses its oldest verbatim messages (dropOldest) and is never sent
 * whole. The chain asks this for each slot it tries (providers/chain.ts,
 * through src/provider-request.ts), so a fallback with a smaller window gets a
 * request that fits it.
 */

/** At most this share of a window is kept for the answer (a larger maxTokens is lowered to it). */
export const ANSWER_SHARE = 0.25;
/** The estimate is ~4 characters a token; the JSON around a request and denser text are the margin. */
export const ESTIMATE_MARGIN = 0.85;

/** What fitting needs to know of a model. */
export interface WindowModel {
  contextWindow: number;
  maxTokens: number;
}

/**
 * The answer's room: the requested maxTokens (never above the model's own; a request's max_tokens is
 * capped so) else the model's, as pi-ai sends it; at most ANSWER_SHARE of the window.
 */
export function answerTokens(model: WindowModel, requested?: number): number {
  const own = model.maxTokens > 0 ? model.maxTokens : Number.POSITIVE_INFINITY;
  const wanted = requested !== undefined ? Math.min(requested, own) : Number.isFinite(own) ? Math.min(own, 32_000) : 0;
  return Math.max(0, Math.min(wanted, Math.floor(model.contextWindow * ANSWER_SHARE)));
}

/** Estimated tokens a request's input (system prompt, tools, messages) may take on this model. */
export function inputBudget(model: WindowModel, requested?: number): number {
  return Math.floor((model.contextWindow - answerTokens(model, requested)) * ESTIMATE_MARGIN);
}

/** The first line of the in-turn summary message (src/compaction.ts): dropped last, after every verbatim message. */
export const SUMMARY_MESSAGE_HEADER = '[Summary of the earlier conversation, which is no longer shown]';

export function isSummaryMessage(m: Message): boolean {
  return m.role === 'user' && (typeof m.content === 'string' ? m.content : '').startsWith(SUMMARY_MESSAGE_HEADER);
}

export interface Fitted {
  context: Context;
  /** The maxTokens to send (the answer's room). */
  maxTokens: number;
  /** How many messages were dropped. */
  dropped: number;
}

/** The request for this model: as it is when it fits, else with its oldest verbatim messages dropped; null when even that does not fit. */
export function fitToModel(context: Context, model: WindowModel, requestedMaxTokens?: number): Fitted | null {
  const maxTokens = answerTokens(model, requestedMaxTokens);
  const budget = inputBudget(model, requestedMaxTokens);
  if (requestTokens(context) <= budget) return { context, maxTokens, dropped: 0 };
  const fixed = requestTokens({ ...context, messages: [] });
  const messages = dropOldest(context.messages, budget - fixed);
  if (!messages) return null;
  return { context: { ...context, messages }, maxTokens, dropped: context.messages.length - messages.length };
}

/**
 * The messages within `budget` tokens, dropping the oldest first, in units that
 * keep a tool call with its results: before the latest user message, whole
 * exchanges (a user message and what answered it); after it (the current
 * turn's tool loop), an assistant message with its tool results, the newest
 * one kept. The latest user message is always kept; a leading summary message
 * goes only when nothing verbatim is left to drop. Null when it cannot fit.
 */
export function dropOldest(messages: readonly Message[], budget: number): Message[] | null {
  const cost = messages.map((m) => estimateTokens([m]));
  let total = cost.reduce((a, b) => a + b, 0);
  if (total <= budget) return [...messages];
  const start = messages.length && isSummaryMessage(messages[0]!) ? 1 : 0;
  let latestUser = -1;
  for (let i = messages.length - 1; i >= start; i--)
    if (messages[i]!.role === 'user') {
      latestUser = i;
      break;
    }
  const units: Array<[number, number]> = [];
  // Before the latest user message: exchanges, each from a user message to the next.
  let from = start;
  for (let i = start + 1; i <= Math.max(latestUser, start); i++) {
    if (i === latestUser || messages[i]!.role === 'user') {
      if (i > from) units.push([from, i]);
      from = i;
    }
  }
  // After it: an assistant message and the tool results that follow it; the newest unit stays.
  const tail: Array<[number, number]> = [];
  from = latestUser >= start ? latestUser + 1 : start;
  for (let i = from + 1; i <= messages.length; i++) {
    if (i === messages.length || messages[i]!.role !== 'toolResult') {
      if (i > from) tail.push([from, i]);
      from = i;
    }
  }
  units.push(...tail.slice(0, -1));
  if (start === 1) units.push([0, 1]); // the summary, last
  const drop = new Set<number>();
  for (const [a, b] of units) {
    if (total <= budget) break;
    for (let i = a; i < b; i++) {
      drop.add(i);
      total -= cost[i]!;
    }
  }
  if (total > budget) return null;
  return messages.filter((_, i) => !drop.has(i));
}
