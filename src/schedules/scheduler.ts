import type { Logger } from 'pino';
import type { JobQueue } from '../../adapters/queue/port.js';
import type { PendingRun, ScheduleRepository } from '../../adapters/store/ports/schedules.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import type { DrainJob } from '../../kernel/jobs.js';
import { PeriodicPass } from '../../kernel/periodic-pass.js';
import type { SchedulesConfig } from './config.js';
import { nextTick } from './next-tick.js';
import { localDayStart, NOTHING_TO_SAY, quietUntil, withinBudget } from './policy.js';

export interface SchedulerDeps {
  schedules: ScheduleRepository;
  /** The inbox write of the drain path (Store.accept). */
  accept: (msg: InboundMessage, agent?: string) => Promise<{ conversationId: string; inboxId: number; duplicate: boolean }>;
  queue: JobQueue<DrainJob>;
  config: SchedulesConfig;
  log: Logger;
  now?: () => Date;
  /** Told of each run whose reply could not be delivered (the gateway emits schedule.undelivered). */
  undelivered?: (run: { scheduleId: string; tick: string; turnId: string | null }) => void;
  /** A schedule's check on the cheap slot (src/schedules/check.ts): false records the run as nothing_to_say without a turn. Unset: runs go ahead. */
  check?: (run: PendingRun & { check: string }, now: Date) => Promise<boolean>;
}

/** The system-authored prompt of a run. */
export function runPrompt(scheduleId: string, prompt: string, tick: Date, coalesced: number): string {
  const missed = coalesced > 1 ? ` (${coalesced} ticks were missed while the gateway was down; this one run stands for all of them)` : '';
  return `[Scheduled message ${scheduleId}, tick ${tick.toISOString()}${missed}. Written by the gateway, not by the user.]\n${prompt}\n\nIf there is nothing worth sending now, answer exactly ${NOTHING_TO_SAY}.`;
}

/**
 * Fires schedules as durable jobs. Every worker may run one: a tick is one schedule_runs row
 * that only one insert wins (ScheduleStore.claimTick), and a pending run is taken by one
 * statement (takeDue), so a tick runs once however many workers or restarts there are. A run
 * writes a message into the conversation's inbox (external id schedule:<id>:<tick>, deduped too)
 * and enqueues the conversation's drain: the turn and its delivery are the ordinary ones.
 */
export class Scheduler {
  private readonly now: () => Date;
  private readonly passes: PeriodicPass;

  constructor(private readonly deps: SchedulerDeps) {
    this.now = deps.now ?? (() => new Date());
    this.passes = new PeriodicPass(
      () => this.pass(),
      deps.config.pollMs,
      (err) => deps.log.warn({ err }, 'schedule pass failed; the next pass retries'),
    );
  }

  start(): void {
    this.passes.start();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One pass: claim the due ticks, fire the due runs, report undelivered ones. Never throws. */
  tick(): Promise<void> {
    return this.passes.run();
  }

  private async pass(): Promise<void> {
    const now = this.now();
    await this.plan(now);
    await this.deps.schedules.reclaimStale(new Date(now.getTime() - 5 * 60_000));
    await this.fire(now);
    for (const run of await this.deps.schedules.undelivered()) {
      this.deps.log.warn({ schedule: run.scheduleId, tick: run.tick, turn: run.turnId }, 'scheduled run answered but could not be delivered');
      this.deps.undelivered?.({ scheduleId: run.scheduleId, tick: run.tick, turnId: run.turnId });
    }
  }

  /** Due schedules: one run per due tick, missed ticks coalesced into one (or skipped), deferred past quiet hours. */
  private async plan(now: Date): Promise<void> {
    const { config } = this.deps;
    for (const s of await this.deps.schedules.due(now)) {
      let next: Date | null = null;
      let coalesced = 1;
      if (s.kind === 'cron' && s.cron) {
        next = nextTick(s.cron, s.tz, s.nextAt);
        while (next && next <= now) {
          coalesced++;
          next = nextTick(s.cron, s.tz, next);
        }
      }
      const late = now.getTime() - s.nextAt.getTime() > config.graceMs;
      const skip = late && config.catchUp === 'skip';
      const dueAt = skip ? now : (quietUntil(now, s.tz, config.quietHours) ?? now);
      const won = await this.deps.schedules.claimTick(s.id, s.nextAt, next, { dueAt, status: skip ? 'skipped' : 'pending', coalesced });
      if (won && dueAt > now) this.deps.log.info({ schedule: s.id, until: dueAt.toISOString() }, 'scheduled run deferred past quiet hours');
    }
  }

  private async fire(now: Date): Promise<void> {
    const { schedules, config } = this.deps;
    for (const run of await schedules.takeDue(now)) {
      // A run deferred to a time that turned out quiet again (the window moved) waits once more.
      const quiet = quietUntil(now, run.tz, config.quietHours);
      if (quiet) {
        await schedules.setRun(run.id, { status: 'pending', dueAt: quiet });
        continue;
      }
      const fired = await schedules.firedSince(run.scheduleId, run.conversationId, localDayStart(now, run.tz));
      // This run is 'firing' and already counted: compare what came before it.
      // A token budget is judged on finished runs: while an earlier run it counts is still going, wait for it.
      const tokensPending = (run.tokensPerDay != null && fired.scheduleRunning > 0) || (config.perRecipientTokensPerDay != null && fired.recipientRunning > 0);
      if (tokensPending) {
        await schedules.setRun(run.id, { status: 'pending', dueAt: new Date(now.getTime() + config.pollMs) });
        continue;
      }
      const before = { ...fired, schedule: fired.schedule - 1, recipient: fired.recipient - 1 };
      const budget = withinBudget(before, {
        perSchedule: run.runsPerDay,
        perRecipient: config.perRecipientPerDay,
        tokensPerSchedule: run.tokensPerDay,
        tokensPerRecipient: config.perRecipientTokensPerDay,
      });
      if (!budget.ok) {
        this.deps.log.info({ schedule: run.scheduleId, tick: run.tick.toISOString(), limit: budget.limit }, 'scheduled run over budget; not run');
        await schedules.setRun(run.id, { status: 'over_budget' });
        continue;
      }
      if (run.check && this.deps.check && !(await this.deps.check({ ...run, check: run.check }, now))) {
        this.deps.log.info({ schedule: run.scheduleId, tick: run.tick.toISOString() }, 'schedule check said no; nothing to say');
        await schedules.setRun(run.id, { status: 'nothing_to_say' });
        continue;
      }
      const replyTo = await schedules.lastReplyTo(run.conversationId);
      const accepted = await this.deps.accept(
        {
          channel: run.channel,
          externalId: `schedule:${run.scheduleId}:${run.tick.toISOString()}`,
          conversationKey: run.conversationKey,
          sender: { id: `schedule:${run.scheduleId}`, name: 'scheduler' },
          text: runPrompt(run.scheduleId, run.prompt, run.tick, run.coalesced),
          attachments: [],
          ...(replyTo ? { replyTo } : {}),
          receivedAt: now,
          ...(run.owner ? { owner: run.owner } : {}),
        },
        run.agent,
      );
      await schedules.setRun(run.id, { status: 'enqueued', inboxId: accepted.inboxId });
      await this.deps.queue.add({ conversationId: accepted.conversationId }, { dedupKey: accepted.conversationId });
    }
  }
}
