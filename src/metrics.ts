import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics of one process (each ingress and worker exposes its own;
 * a worker without HTTP keeps counting for a future scrape endpoint).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly turns = new Counter({
    name: 'switchboard_turns_total',
    help: 'Finished turns by channel and finish reason',
    labelNames: ['channel', 'finish_reason'] as const,
    registers: [this.registry],
  });
  readonly turnSeconds = new Histogram({
    name: 'switchboard_turn_duration_seconds',
    help: 'Turn latency, from start to done',
    labelNames: ['channel'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly firstTokenSeconds = new Histogram({
    name: 'switchboard_time_to_first_token_seconds',
    help: 'Time from turn start to the first streamed text',
    labelNames: ['channel'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });
  readonly providerAttempts = new Counter({
    name: 'switchboard_provider_attempts_total',
    help: 'Model call attempts by slot and outcome (ok or error class)',
    labelNames: ['slot', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly fallbacks = new Counter({
    name: 'switchboard_provider_fallbacks_total',
    help: 'Turns answered by a slot other than the first',
    labelNames: ['slot'] as const,
    registers: [this.registry],
  });
  readonly approvalsRequested = new Counter({
    name: 'switchboard_approvals_requested_total',
    help: 'Approval requests by tier',
    labelNames: ['tier'] as const,
    registers: [this.registry],
  });
  readonly approvalsPending = new Gauge({ name: 'switchboard_approvals_pending', help: 'Approval requests waiting for an answer', registers: [this.registry] });
  readonly queueDepth = new Gauge({ name: 'switchboard_queue_jobs', help: 'Drain jobs by state', labelNames: ['state'] as const, registers: [this.registry] });
  readonly handoffs = new Counter({
    name: 'switchboard_handoffs_total',
    help: 'Human takeover: handoffs by outcome (requested, taken, returned, expired)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly deliveryJobs = new Counter({
    name: 'switchboard_delivery_jobs_total',
    help: 'Replies handed to the delivery queue after their turn closed, and what became of each try (queued, delivered, retry, dead)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly deadDeliveries = new Counter({
    name: 'switchboard_delivery_dead_letters_total',
    help: 'Replies given up on (dead-lettered) by channel and error code',
    labelNames: ['channel', 'code'] as const,
    registers: [this.registry],
  });
  readonly roomIgnored = new Counter({
    name: 'switchboard_room_messages_ignored_total',
    help: 'Room messages left unanswered by group-chat manners, by channel and reason',
    labelNames: ['channel', 'reason'] as const,
    registers: [this.registry],
  });
  readonly dropped = new Counter({
    name: 'switchboard_messages_dropped_total',
    help: 'Inbound messages not answered, by channel and reason (access, rate_limited, conversation_full, catch_up_too_old, automated…)',
    labelNames: ['channel', 'reason'] as const,
    registers: [this.registry],
  });
  readonly requests = new Counter({
    name: 'switchboard_http_requests_total',
    help: 'HTTP API requests by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });

  /** switchboard_messages_dropped_total as rows, most first (for the console). */
  async droppedCounts(): Promise<Array<{ channel: string; reason: string; count: number }>> {
    const { values } = await this.dropped.get();
    return values
      .map((v) => ({ channel: String(v.labels.channel ?? ''), reason: String(v.labels.reason ?? ''), count: v.value }))
      .filter((r) => r.count > 0)
      .sort((a, b) => b.count - a.count || a.channel.localeCompare(b.channel) || a.reason.localeCompare(b.reason));
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'switchboard_' });
  }
}
