import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { JobQueue } from '../adapters/queue/port.js';
import type { OpenTurn, StartedTurn, TurnRepository } from '../adapters/store/ports/index.js';
import type { InboundMessage } from '../kernel/envelope.js';
import type { DrainJob } from '../kernel/jobs.js';
import { queueModeFor } from '../kernel/queue-modes.js';
import type { Config } from './config.js';
import { jobTrace } from './telemetry/tracer.js';

/**
 * Opening a one-off conversation's first turn in its accept statement (issue #24): where the
 * worker of the process that accepts the message has a free slot now, the ingress writes the
 * message, the conversation's lease and the turn in one statement (the store's acceptOpening)
 * and the drain starts here at once from what that statement returned, skipping its startTurn:
 * one statement and one synchronous commit fewer on the way to the first token.
 */

/** What the ingress asks before the accept of a message minted with its conversation. */
export interface TurnOpener {
  /** A ticket when this process's worker has a slot free for the turn now; undefined: accept as usual. */
  reserve(msg: InboundMessage): OpeningTicket | undefined;
}

/** A held worker slot and the turn to open in it. Call start() or putBack() once, or release() if no turn was opened. */
export interface OpeningTicket {
  open: OpenTurn;
  /** Starts the opened turn's drain here; false when the queue closed meanwhile (the turn was put back: enqueue a drain). */
  start(conversationId: string, started: StartedTurn, sentAt: number): Promise<boolean>;
  /** Takes back the opened turn (deleted, its message unclaimed, the lease given back) and the slot: nothing ran. */
  putBack(conversationId: string, started: StartedTurn): Promise<void>;
  /** Gives the slot back (the statement opened no turn). */
  release(): void;
}

/** What a drain started from a ticket is handed in process (JobContext.local). */
export interface OpenedDrain {
  lease: string;
  started: StartedTurn;
  /** When the accept statement was sent: the lease counts from then (src/turn/lease-guard.ts). */
  sentAt: number;
}

/** Memory notes a turn starts with (the drain's startTurn reads as many). */
export const TURN_MEMORY_LIMIT = 20;

export function turnOpener(deps: {
  worker: string;
  queue: JobQueue<DrainJob>;
  store: Pick<TurnRepository, 'deferTurn'>;
  config: Config;
  log: Logger;
}): TurnOpener {
  const { config, queue, store, log } = deps;
  return {
    reserve(msg) {
      if (!config.queue.openOnAccept) return undefined;
      // Collect waits for a pause before it claims anything: its first drain must not open a turn at once.
      const mode = queueModeFor(config.conversations, msg.channel);
      if (mode === 'collect') return undefined;
      const slot = queue.reserveLocal?.();
      if (!slot) return undefined;
      const open: OpenTurn = {
        turnId: 't_' + randomUUID(),
        worker: deps.worker,
        lease: randomUUID(),
        leaseMs: config.queue.lockDurationMs,
        memoryLimit: TURN_MEMORY_LIMIT,
      };
      const putBack = async (conversationId: string, started: StartedTurn) => {
        try {
          await store.deferTurn(started.turn!.id, conversationId, open.lease);
        } catch (err) {
          // The turn stays open under a lease nobody renews: once it expires, the recovery sweep resumes it.
          log.warn({ err, conversation: conversationId }, 'putting back a turn opened at accept failed; the recovery sweep resumes it');
        }
      };
      return {
        open,
        async start(conversationId, started, sentAt) {
          const opened: OpenedDrain = { lease: open.lease, started: { ...started, mode }, sentAt };
          if (slot.run({ conversationId, ...jobTrace() }, opened)) return true;
          await putBack(conversationId, started);
          return false;
        },
        async putBack(conversationId, started) {
          slot.release();
          await putBack(conversationId, started);
        },
        release: () => slot.release(),
      };
    },
  };
}
