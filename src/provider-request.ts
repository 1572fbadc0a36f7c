/**
 * The one way to a model provider. Every request the gateway sends — a turn's
 * model calls, the compaction summarizer, the honesty judge, doctor's probe —
 * is built here, and this is the only module that calls a provider chain's
 * stream() (test/provider-redaction.test.ts greps the source tree for others).
 *
 * Every byte of text in a request passes the turn's Redactor (moat/secrets.ts,
 * stable placeholders) on its way out: each system prompt part (the prompt
 * files, the agent's instructions, a one-off request's system messages, the
 * memory block, the running summary), every message of every role (user,
 * assistant text, thinking and tool-call arguments, tool results) and the tool
 * definitions. Images are passed as they are.
 *
 * Policy `block` (moat.secrets: block) looks at the same parts: a secret in any
 * of them refuses the request — nothing is sent, the stream ends in an error
 * whose message says why, and onBlocked is told where it was. The exceptions
 * are what a model wrote itself (assistant messages of the conversation, the
 * summaries): sending them back cannot tell a provider anything it did not
 * write, and refusing would lock the conversation for good, so they are
 * redacted in both modes. A one-off request's own assistant messages are the
 * user's words: mark them with markAuthor(m, 'user') and they block.
 *
 * And every request fits the window of the slot it goes to: the chain asks
 * fitToModel (src/context-fit.ts) before each attempt, which drops the oldest
 * verbatim messages of a request too large for that slot, or refuses to send it.
 */
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Message,
  type SimpleStreamOptions,
} from '@mariozechner/pi-ai';
import { type MessageSecretPolicy, Redactor } from '../moat/secrets.js';
import type { ChainHooks, ProviderChain } from '../providers/chain.js';
import { fitToModel } from './context-fit.js';

export type SecretsPolicy = MessageSecretPolicy;

/** Who wrote a part of the system prompt. */
export type PartAuthor = 'operator' | 'user' | 'model';

/** One part of the system prompt; the parts are joined with a blank line. */
export interface SystemPart {
  text: string;
  /** What the part is, as a refusal names it ("agent instructions", "memory notes"...). */
  label: string;
  /** 'user': the sender of this request wrote it; 'model': a summary the model wrote. Default 'operator'. */
  from?: PartAuthor;
}

export interface ProviderRequest {
  /** The system prompt, in parts (a plain string is an operator part). */
  system?: ReadonlyArray<SystemPart | string>;
  messages: readonly Message[];
  tools?: Context['tools'];
}

export interface SendOptions {
  /** The turn's Redactor: the same secret gets the same placeholder in every request of the turn. */
  redactor: Redactor;
  policy: SecretsPolicy;
  /** Passed to the chain (signal, maxTokens, temperature, sessionId...). */
  options?: SimpleStreamOptions;
  hooks?: ChainHooks;
  /** policy 'block' refused the request: what was found, and where. */
  onBlocked?(found: SecretsFound): void;
}

export interface SecretsFound {
  kinds: string[];
  /** Where the secrets were: "user message", "agent instructions", "tool result"... */
  where: string[];
  /** At least one was in something the sender of the request wrote (a user message, a one-off request's messages). */
  fromUser: boolean;
}

/** The refusal for a secret in the user's own message; unchanged since block mode began. */
export function userRefusal(kinds: readonly string[]): string {
  return `Your message was not sent to the model: it contains what looks like a secret (${kinds.join(', ')}). Remove it and try again.`;
}

/** What the user is told when policy 'block' refuses a request. */
export function refusalText(found: SecretsFound): string {
  if (found.fromUser) return userRefusal(found.kinds);
  return `This request was not sent to the model: what looks like a secret (${found.kinds.join(', ')}) is in its ${found.where.join(', ')}, and secrets are blocked here (moat.secrets: block).`;
}

const authors = new WeakMap<Message, 'user' | 'model'>();

/**
 * Who wrote a message, where its role does not say: a one-off request's
 * assistant messages were written by the user; a summary shown as a user
 * message was written by the model.
 */
export function markAuthor<M extends Message>(m: M, author: 'user' | 'model'): M {
  authors.set(m, author);
  return m;
}

function authorOf(m: Message): 'user' | 'model' | 'tool' {
  const a = authors.get(m);
  if (a) return a;
  return m.role === 'assistant' ? 'model' : m.role === 'toolResult' ? 'tool' : 'user';
}

/** Redactions are remembered per Redactor (that is, per turn): a message is scanned once, not at every model call. */
interface Cache {
  messages: WeakMap<Message, { message: Message; kinds: string[] }>;
  tools: WeakMap<object, { tool: object; kinds: string[] }>;
  texts: Map<string, { text: string; kinds: string[] }>;
}
const caches = new WeakMap<Redactor, Cache>();

function cacheOf(r: Redactor): Cache {
  let c = caches.get(r);
  if (!c) caches.set(r, (c = { messages: new WeakMap(), tools: new WeakMap(), texts: new Map() }));
  return c;
}

/** Text through the redactor, collecting the kinds found. */
type Mapper = (text: string) => string;

/**
 * Texts that come back the same in every turn (prompt files, skills, tool
 * descriptions and schemas) and hold no secret, per scan options: a text with
 * no finding is its own redaction under any Redactor, so later turns skip it.
 */
const clean = new Map<string, Set<string>>();
const CLEAN_MAX = 20_000;

function mapper(r: Redactor, kinds: string[], remember = false): Mapper {
  const known = remember ? cleanSet(r) : null;
  return (text) => {
    if (!text || known?.has(text)) return text;
    const out = r.redact(text);
    for (const f of out.findings) kinds.push(f.kind);
    if (known && !out.findings.length && text.length <= 65_536) {
      if (known.size >= CLEAN_MAX) known.clear();
      known.add(text);
    }
    return out.text;
  };
}

function cleanSet(r: Redactor): Set<string> {
  const key = JSON.stringify(r.options);
  let s = clean.get(key);
  if (!s) clean.set(key, (s = new Set()));
  return s;
}

/** Every string (and key) of a JSON-like value; the same object back when nothing changed. */
function mapDeep<T>(v: T, f: Mapper, depth = 0): T {
  if (typeof v === 'string') return f(v) as T;
  if (!v || typeof v !== 'object' || depth > 64) return v;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    v.forEach((x, i) => {
      const y = mapDeep(x, f, depth + 1);
      if (y !== x) (out ??= [...v])[i] = y;
    });
    return (out ?? v) as T;
  }
  let out: Record<string, unknown> | undefined;
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k];
    const y = mapDeep(x, f, depth + 1);
    const k2 = f(k);
    if (y === x && k2 === k) continue;
    out ??= { ...(v as Record<string, unknown>) }; // keeps symbol keys (TypeBox's Kind)
    if (k2 !== k) delete out[k];
    out[k2] = y;
  }
  return (out ?? v) as T;
}

function mapMessage(m: Message, f: Mapper): Message {
  if (m.role === 'user') {
    if (typeof m.content === 'string') {
      const t = f(m.content);
      return t === m.content ? m : { ...m, content: t };
    }
    const content = mapParts(m.content, f);
    return content === m.content ? m : { ...m, content };
  }
  // assistant (text, thinking, tool-call arguments) and toolResult
  const content = mapParts<(typeof m.content)[number]>(m.content, f);
  return content === m.content ? m : ({ ...m, content } as Message);
}

type AnyPart = { type: string; text?: string; thinking?: string; redacted?: boolean; thinkingSignature?: string; arguments?: Record<string, unknown> };

function mapParts<P>(parts: P[], f: Mapper): P[] {
  let out: P[] | undefined;
  parts.forEach((p0, i) => {
    const p = p0 as AnyPart;
    let q: AnyPart = p;
    if (p.type === 'text' && typeof p.text === 'string') {
      const t = f(p.text);
      if (t !== p.text) q = { ...p, text: t };
    } else if (p.type === 'thinking' && typeof p.thinking === 'string' && !p.redacted) {
      const t = f(p.thinking);
      if (t !== p.thinking) {
        // The signature covered the original text; without it the thinking goes back as plain text.
        const { thinkingSignature: _sig, ...rest } = p;
        q = { ...rest, thinking: t };
      }
    } else if (p.type === 'toolCall' && p.arguments) {
      const a = mapDeep(p.arguments, f);
      if (a !== p.arguments) q = { ...p, arguments: a };
    }
    if (q !== p) (out ??= [...parts])[i] = q as P;
  });
  return out ?? parts;
}

function where(m: Message): string {
  const a = authors.get(m);
  if (m.role === 'toolResult') return 'tool result';
  if (m.role === 'assistant') return a === 'user' ? "request's assistant message" : 'assistant message';
  return a === 'model' ? 'conversation summary' : 'user message';
}

interface Prepared {
  context: Context;
  /** Secrets in parts that block (all but what the model wrote). */
  blocking: SecretsFound | null;
}

/** The request as it goes out: every part redacted; and what `block` would refuse. */
function prepare(req: ProviderRequest, r: Redactor): Prepared {
  const cache = cacheOf(r);
  const kinds = new Set<string>();
  const places = new Set<string>();
  let fromUser = false;
  const found = (k: readonly string[], place: string, user: boolean) => {
    if (!k.length) return;
    for (const x of k) kinds.add(x);
    places.add(place);
    if (user) fromUser = true;
  };
  const text = (t: string) => {
    let e = cache.texts.get(t);
    if (!e) {
      const k: string[] = [];
      e = { text: mapper(r, k, true)(t), kinds: k };
      if (cache.texts.size < 256) cache.texts.set(t, e);
    }
    return e;
  };

  const system: string[] = [];
  for (const p0 of req.system ?? []) {
    const p: SystemPart = typeof p0 === 'string' ? { text: p0, label: 'system prompt' } : p0;
    if (!p.text) continue;
    const e = text(p.text);
    system.push(e.text);
    if (p.from !== 'model') found(e.kinds, p.label, p.from === 'user');
  }

  const messages = req.messages.map((m) => {
    let e = cache.messages.get(m);
    if (!e) {
      const k: string[] = [];
      e = { message: mapMessage(m, mapper(r, k)), kinds: k };
      cache.messages.set(m, e);
    }
    const author = authorOf(m);
    if (author !== 'model') found(e.kinds, where(m), author === 'user');
    return e.message;
  });

  let tools: Context['tools'];
  if (req.tools) {
    tools = req.tools.map((t) => {
      let e = cache.tools.get(t);
      if (!e) {
        const k: string[] = [];
        const f = mapper(r, k, true);
        const description = f(t.description ?? '');
        const parameters = mapDeep(t.parameters, f);
        e = { tool: description === t.description && parameters === t.parameters ? t : { ...t, description, parameters }, kinds: k };
        cache.tools.set(t, e);
      }
      found(e.kinds, 'tool definitions', false);
      return e.tool as NonNullable<Context['tools']>[number];
    });
  }

  const context: Context = { messages, ...(system.length ? { systemPrompt: system.join('\n\n') } : {}), ...(tools ? { tools } : {}) };
  return { context, blocking: kinds.size ? { kinds: [...kinds], where: [...places], fromUser } : null };
}

/**
 * The secrets policy `block` would refuse this request for (null: none).
 * A turn asks before it starts, so that a refused message costs no summarizer call.
 */
export function findSecrets(req: ProviderRequest, redactor: Redactor = new Redactor()): SecretsFound | null {
  return prepare(req, redactor).blocking;
}

/**
 * Sends one request through a provider chain: the only call of chain.stream().
 * The request is redacted (or, under `block`, refused) here; when the chain
 * reports a context overflow, the caller's hook gets the request's own
 * messages and what it returns is redacted (or refused) again before the retry.
 */
export function sendToProvider(chain: ProviderChain, req: ProviderRequest, opts: SendOptions): AssistantMessageEventStream {
  const first = prepare(req, opts.redactor);
  if (opts.policy === 'block' && first.blocking) {
    opts.onBlocked?.(first.blocking);
    return refused(chain, refusalText(first.blocking));
  }
  // Whatever the caller built, each slot gets a request that fits its window (src/context-fit.ts).
  const hooks: ChainHooks = { ...opts.hooks, fitToWindow: (context, model, maxTokens) => fitToModel(context, model, maxTokens) };
  const overflow = opts.hooks?.onContextOverflow;
  if (overflow) {
    hooks.onContextOverflow = async (sent) => {
      const smaller = await overflow({ ...sent, messages: [...req.messages], ...(req.tools ? { tools: req.tools } : {}) });
      if (!smaller) return null;
      const again = prepare({ ...req, messages: smaller.messages, ...(smaller.tools ? { tools: smaller.tools } : {}) }, opts.redactor);
      if (opts.policy === 'block' && again.blocking) return null;
      return again.context;
    };
  }
  return chain.stream(first.context, opts.options ?? {}, hooks);
}

/** The stream of a request that was not sent: one error, no attempt. */
function refused(chain: ProviderChain, why: string): AssistantMessageEventStream {
  const out = createAssistantMessageEventStream();
  const m = chain.primary;
  const error: AssistantMessage = {
    role: 'assistant',
    content: [],
    api: m.api,
    provider: m.provider,
    model: m.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: 'error',
    errorMessage: why,
    timestamp: Date.now(),
  };
  out.push({ type: 'error', reason: 'error', error });
  return out;
}
