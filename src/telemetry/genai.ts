import type { Attributes } from '@opentelemetry/api';
import { trace } from '@opentelemetry/api';
import { ATTR, type Context, failSpan, linkTo, type Span, SpanKind, SpanStatusCode, startSpan, traceparentOf } from './tracer.js';

/**
 * The OpenTelemetry GenAI semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/):
 * the attribute names a model call's and a tool call's spans carry.
 */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  /** The name before gen_ai.provider.name (semconv ≤ 1.36), still read by some backends: both are set. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Input tokens served from, and written to, the provider's prompt cache (both also counted in gen_ai.usage.input_tokens). */
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
  conversationId: 'gen_ai.conversation.id',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  /** The provider's endpoint (the conventions' server.address and server.port, Recommended for a model call's span). */
  serverAddress: 'server.address',
  serverPort: 'server.port',
} as const;

/** server.address and server.port of a provider's base URL (its port, else the scheme's); none when it is not a URL. */
export function serverOf(baseUrl: string | undefined): Attributes {
  if (!baseUrl) return {};
  try {
    const u = new URL(baseUrl);
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : u.protocol === 'http:' ? 80 : undefined;
    return { [GEN_AI.serverAddress]: u.hostname.replace(/^\[|\]$/g, ''), ...(port ? { [GEN_AI.serverPort]: port } : {}) };
  } catch {
    return {};
  }
}

/** What a model call's span needs of pi-ai's assistant message (structurally, so that this file imports no SDK). */
export interface ModelAnswer {
  model?: string;
  provider?: string;
  responseId?: string;
  stopReason?: string;
  errorMessage?: string;
  /** pi-ai's: `input` is the prompt's tokens not read from or written to the cache (those are cacheRead, cacheWrite). */
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
}

/** pi-ai's provider names as the conventions' well-known gen_ai.provider.name values; any other is sent as it is. */
const PROVIDER: Record<string, string> = {
  'amazon-bedrock': 'aws.bedrock',
  google: 'gcp.gemini',
  'google-vertex': 'gcp.vertex_ai',
  'azure-openai-responses': 'azure.ai.openai',
  mistral: 'mistral_ai',
  xai: 'x_ai',
};

export function providerName(piProvider: string): string {
  return PROVIDER[piProvider] ?? piProvider;
}

/** pi-ai's stop reasons as finish reasons (OpenAI's words where there is one). */
const FINISH: Record<string, string> = { stop: 'stop', length: 'length', toolUse: 'tool_calls', error: 'error', aborted: 'cancelled' };

/** The moat's answer to one tool call, as the tool span carries it. */
export interface ToolDecision {
  /** The engine's allow | deny | ask; `approved`: an asked call an operator approved, run on resume; `journaled`: an earlier attempt's. */
  decision: 'allow' | 'deny' | 'ask' | 'approved' | 'journaled';
  tier?: string;
  approvalId?: string;
}

/**
 * One turn's model-call and tool-call spans, children of the turn's span. The agent loop opens and
 * closes them at its events (a model call from its request to its message_end; a tool call from
 * tool_execution_start to tool_execution_end); endAll() closes whatever an abort left open.
 */
export class TurnTrace {
  private chat?: Span;
  /** The open model call is a response the step journal plays back: no provider was asked. */
  private replayed = false;
  private readonly tools = new Map<string, Span>();

  constructor(
    private readonly parent: Context,
    private readonly conversationId?: string,
  ) {}

  chatStart(model: { id: string; provider: string; baseUrl?: string }, opts: { maxTokens?: number; temperature?: number; replayed?: boolean } = {}): void {
    this.chat?.end();
    const attributes: Attributes = {
      [GEN_AI.operation]: 'chat',
      [GEN_AI.provider]: providerName(model.provider),
      [GEN_AI.system]: providerName(model.provider),
      [GEN_AI.requestModel]: model.id,
      ...serverOf(model.baseUrl),
      ...(opts.maxTokens !== undefined ? { [GEN_AI.maxTokens]: opts.maxTokens } : {}),
      ...(opts.temperature !== undefined ? { [GEN_AI.temperature]: opts.temperature } : {}),
      ...(this.conversationId ? { [GEN_AI.conversationId]: this.conversationId } : {}),
      ...(opts.replayed ? { [ATTR.replayed]: true } : {}),
    };
    this.chat = startSpan(`chat ${model.id}`, { kind: SpanKind.CLIENT, attributes, parent: this.parent });
    this.replayed = opts.replayed === true;
  }

  /** One attempt of the provider chain (a fallback's slot, its error class, its time); the slot that answered is the span's server. */
  chatAttempt(a: { slot: string; error: string; ms: number }, baseUrl?: string): void {
    if (a.error === 'ok' && baseUrl) this.chat?.setAttributes(serverOf(baseUrl));
    this.chat?.addEvent('switchboard.provider.attempt', {
      'switchboard.provider.slot': a.slot,
      'switchboard.provider.outcome': a.error,
      'switchboard.provider.ms': a.ms,
    });
  }

  chatEnd(m: ModelAnswer): void {
    const span = this.chat;
    if (!span) return;
    this.chat = undefined;
    if (m.model) span.setAttribute(GEN_AI.responseModel, m.model);
    // The slot that answered (a fallback may be another provider's).
    if (m.provider) span.setAttributes({ [GEN_AI.provider]: providerName(m.provider), [GEN_AI.system]: providerName(m.provider) });
    if (m.responseId) span.setAttribute(GEN_AI.responseId, m.responseId);
    // A played-back response used no tokens now (the attempt that asked the provider counted them): none are reported twice.
    if (m.usage && !this.replayed) {
      // The conventions' input tokens are the whole prompt's, cached ones included.
      const cacheRead = m.usage.cacheRead ?? 0;
      const cacheWrite = m.usage.cacheWrite ?? 0;
      span.setAttribute(GEN_AI.inputTokens, m.usage.input + cacheRead + cacheWrite);
      span.setAttribute(GEN_AI.outputTokens, m.usage.output);
      if (cacheRead) span.setAttribute(GEN_AI.cacheReadTokens, cacheRead);
      if (cacheWrite) span.setAttribute(GEN_AI.cacheCreationTokens, cacheWrite);
    }
    if (m.stopReason) span.setAttribute(GEN_AI.finishReasons, [FINISH[m.stopReason] ?? m.stopReason]);
    if (m.stopReason === 'error') {
      span.setAttribute('error.type', 'provider_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: m.errorMessage ?? 'the model provider failed' });
    }
    span.end();
  }

  toolStart(toolCallId: string, name: string): void {
    this.tools.get(toolCallId)?.end();
    this.tools.set(
      toolCallId,
      startSpan(`execute_tool ${name}`, {
        kind: SpanKind.INTERNAL,
        parent: this.parent,
        attributes: { [GEN_AI.operation]: 'execute_tool', [GEN_AI.toolName]: name, [GEN_AI.toolCallId]: toolCallId, [GEN_AI.toolType]: 'function' },
      }),
    );
  }

  toolEnd(toolCallId: string, r: { isError: boolean; decision?: ToolDecision; pending?: boolean }): void {
    const span = this.tools.get(toolCallId);
    if (!span) return;
    this.tools.delete(toolCallId);
    if (r.decision) {
      span.setAttribute(ATTR.moatDecision, r.decision.decision);
      if (r.decision.tier) span.setAttribute(ATTR.moatTier, r.decision.tier);
      if (r.decision.approvalId) span.setAttribute(ATTR.approvalId, r.decision.approvalId);
    }
    if (r.isError && !r.pending) {
      span.setAttribute('error.type', r.decision?.decision === 'deny' ? 'refused_by_policy' : 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  /**
   * The turn's span as an approval keeps it (its `approval wait` span goes under it, src/telemetry/approval-spans.ts);
   * undefined when the turn is not recorded (traces off, or not sampled): nothing to keep.
   */
  traceparent(): string | undefined {
    return trace.getSpan(this.parent)?.isRecording() ? traceparentOf(this.parent) : undefined;
  }

  /** A resumed turn links the turn that parked on this approval (in the trace of the message that asked), once per parked turn. */
  resumedFrom(a: { traceparent?: string }): void {
    if (!a.traceparent || this.linked.has(a.traceparent)) return;
    this.linked.add(a.traceparent);
    const span = trace.getSpan(this.parent);
    for (const l of linkTo(a.traceparent)) span?.addLink(l);
  }
  private readonly linked = new Set<string>();

  /** Closes what is still open (the loop threw or was aborted mid-call). */
  endAll(err?: unknown): void {
    for (const span of [...(this.chat ? [this.chat] : []), ...this.tools.values()]) {
      if (err) failSpan(span, err);
      span.end();
    }
    this.chat = undefined;
    this.tools.clear();
  }
}
