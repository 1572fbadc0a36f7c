/** The turn's sinks alone: what the metrics count, what the event webhooks are sent, how the fan-out treats a failure. */
import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '../kernel/turn-events.js';
import { Metrics } from '../src/metrics.js';
import { fanOut } from '../src/turn/sinks/fan-out.js';
import { metricsSink } from '../src/turn/sinks/metrics-sink.js';
import { eventWebhookSink } from '../src/turn/sinks/webhook-sink.js';
import type { EventHub } from '../src/webhooks/events.js';
import { RecordingSink, silentLog } from './support/turn-fakes.js';

const usage = { input: 1, output: 2, totalTokens: 3, cost: 0 };
const fallback = {
  slot: 'b',
  fallbackActivated: true,
  attempts: [
    { slot: 'a', error: 'server', ms: 5 },
    { slot: 'b', error: 'ok', ms: 7 },
  ],
};

async function value(m: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name)!;
  const rows = metric.values.filter(
    (v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want) && (!('metricName' in v) || !String(v.metricName).endsWith('_bucket')),
  );
  const count = rows.find((v) => String((v as { metricName?: string }).metricName ?? '').endsWith('_count'));
  return count ? count.value : rows.reduce((n, v) => n + v.value, 0);
}

describe('turn sinks', () => {
  it('the metrics sink counts the first token once, the turn, its fallback, approvals and each provider attempt; a parked turn is not timed', async () => {
    const m = new Metrics();
    const s = metricsSink(m, 'slack');
    s.push({ type: 'turn_start', turnId: 't', conversationId: 'c', inboxIds: [1], attempt: 1 });
    s.push({ type: 'text_delta', turnId: 't', delta: 'a' });
    s.push({ type: 'text_delta', turnId: 't', delta: 'b' });
    s.attempt!({ slot: 'a', error: 'server', ms: 5 });
    s.attempt!({ slot: 'b', error: 'ok', ms: 7 });
    s.push({ type: 'done', turnId: 't', text: 'ab', finishReason: 'stop', usage, provider: fallback });
    expect(await value(m, 'switchboard_time_to_first_token_seconds', { channel: 'slack' })).toBe(1);
    expect(await value(m, 'switchboard_turns_total', { channel: 'slack', finish_reason: 'stop' })).toBe(1);
    expect(await value(m, 'switchboard_turn_duration_seconds', { channel: 'slack' })).toBe(1);
    expect(await value(m, 'switchboard_provider_fallbacks_total', { slot: 'b' })).toBe(1);
    expect(await value(m, 'switchboard_provider_attempts_total', { slot: 'a', outcome: 'server' })).toBe(1);
    expect(await value(m, 'switchboard_provider_attempts_total', { slot: 'b', outcome: 'ok' })).toBe(1);

    const parked = metricsSink(m, 'sms');
    parked.push({ type: 'turn_start', turnId: 'p', conversationId: 'c', inboxIds: [2], attempt: 1 });
    parked.push({
      type: 'approval_requested',
      turnId: 'p',
      approval: { code: 'K7Q4P', tool: 'shell_exec', tier: 'caution', expiresAt: new Date().toISOString(), args: {}, reasons: [] },
    });
    parked.push({ type: 'done', turnId: 'p', text: '', finishReason: 'approval_pending', usage });
    expect(await value(m, 'switchboard_approvals_requested_total', { tier: 'caution' })).toBe(1);
    expect(await value(m, 'switchboard_turns_total', { channel: 'sms', finish_reason: 'approval_pending' })).toBe(1);
    expect(await value(m, 'switchboard_turn_duration_seconds', { channel: 'sms' })).toBe(0);
  });

  it('the event-webhook sink sends turn.completed or turn.failed for a closed turn, provider.fallback when a fallback answered, nothing for a parked one', () => {
    const sent: Array<{ type: string; data: Record<string, unknown> }> = [];
    const hub = { emit: (type: string, data: Record<string, unknown>) => void sent.push({ type, data }) } as unknown as EventHub;
    const s = eventWebhookSink(hub, { id: 'c_1', key: 'slack:T1:C1', channel: 'slack' });
    s.push({ type: 'text_delta', turnId: 't', delta: 'x' });
    s.push({ type: 'done', turnId: 't1', text: 'ok', finishReason: 'stop', usage, provider: fallback });
    s.push({ type: 'done', turnId: 't2', text: 'sorry', finishReason: 'error', usage });
    s.push({ type: 'done', turnId: 't3', text: '', finishReason: 'approval_pending', usage });
    expect(sent.map((e) => `${e.type}:${e.data.turn}`)).toEqual(['turn.completed:t1', 'provider.fallback:t1', 'turn.failed:t2']);
    expect(sent[0]!.data).toMatchObject({ conversation: 'c_1', conversationKey: 'slack:T1:C1', channel: 'slack', finishReason: 'stop', text: 'ok', slot: 'b' });
    expect(sent[1]!.data.attempts).toEqual(fallback.attempts);
  });

  it('the fan-out keeps order, drops a sink that throws, and lets a failed flush through (the turn is retried)', async () => {
    const first = new RecordingSink();
    const last = new RecordingSink();
    let throws = 0;
    const flaky = {
      push: (e: TurnEvent) => {
        if (e.type === 'text_delta') {
          throws++;
          throw new Error('down');
        }
      },
    };
    const failingFlush = { push: () => {}, flush: async () => Promise.reject(new Error('the platform gave up')) };
    const sink = fanOut(
      [{ name: 'first', sink: first }, { name: 'flaky', sink: flaky }, undefined, { name: 'last', sink: last }, { name: 'delivery', sink: failingFlush }],
      silentLog,
    );
    sink.push({ type: 'text_delta', turnId: 't', delta: 'a' });
    sink.push({ type: 'text_delta', turnId: 't', delta: 'b' });
    expect(throws).toBe(1);
    expect(first.types()).toEqual(['text_delta', 'text_delta']);
    expect(last.types()).toEqual(['text_delta', 'text_delta']);
    await expect(sink.flush!()).rejects.toThrow('the platform gave up');
    expect(first.flushes).toEqual([2]);
  });
});
