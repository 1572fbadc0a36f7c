import type { Logger } from 'pino';
import type { Bus } from '../../adapters/bus/port.js';
import type { JobQueue } from '../../adapters/queue/port.js';
import type {
  AcceptResult,
  ConversationRepository,
  InboxRepository,
  IngressOutcomeRepository,
  TurnRepository,
  WaitingCount,
} from '../../adapters/store/ports/index.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import type { Identity } from '../../kernel/identity.js';
import type { DrainJob } from '../../kernel/jobs.js';
import type { AccessControl } from '../access.js';
import type { ApprovalAnswer } from '../approvals/parse.js';
import type { ApprovalService } from '../approvals/service.js';
import type { CommandName, ConversationCommands } from '../commands.js';
import type { Config } from '../config.js';
import type { HandoffService } from '../handoffs/service.js';
import type { OperatorCommand } from '../handoffs/text.js';
import type { RateLimits } from '../limits.js';
import type { TurnOpener } from '../turn-opening.js';
import type { Step } from './compose.js';
import type { IngressOutcome, ReceiveOptions } from './outcome.js';

/** The store methods the steps use. */
export type IngressStore = Pick<InboxRepository, 'accept' | 'inboxByExternalId'> &
  Pick<ConversationRepository, 'waitingCount'> &
  Pick<TurnRepository, 'acceptOpening'>;

/** What the ingress is built from; every part but the store and queue is optional (its step then hands on). */
export interface IngressDeps {
  store: IngressStore;
  queue: JobQueue<DrainJob>;
  log: Logger;
  access?: AccessControl;
  approvals?: ApprovalService;
  commands?: ConversationCommands;
  /** For queue modes and the cap on waiting messages. */
  conversations?: { config: Config; bus: Bus };
  limits?: RateLimits;
  /** Human takeover: while a conversation is taken over (or waits for an operator) no turn is woken. */
  handoffs?: HandoffService;
  /** Recorded outcomes, for replaying redeliveries. */
  outcomes?: IngressOutcomeRepository<IngressOutcome>;
  enqueueTimeoutMs?: number;
  /**
   * This process's worker, when it runs here: a message minted with its conversation (newConversation)
   * gets its first turn opened in the accept statement and run here at once, while a slot is free (src/turn-opening.ts).
   */
  opener?: TurnOpener;
  /** A refusal (not a replayed one), for switchboard_messages_dropped_total. Must not throw. */
  dropped?: (channel: string, reason: string) => void;
}

/** One message on its way through the steps: the parts, the caller's options, and what earlier steps found. */
export interface IngressContext {
  deps: IngressDeps;
  opts: ReceiveOptions;
  /** The sender as a whole identity (channel, workspace, id): access, limits and approvals compare it so. */
  sender: Identity;
  /** Set by the waiting-cap step: the conversation before this message. */
  before?: WaitingCount;
  /** Set by the parked step: what the sender is told at once when the message is accepted (its turn waits for approvals). */
  notice?: string;
  /** Set by the accept step. */
  accepted?: AcceptResult;
  /** The text parsed as a command and as an approval answer, once each, on first ask (text-intent.ts). */
  parsed?: { command?: CommandName | null; answer?: ApprovalAnswer | null; operatorCommand?: OperatorCommand | null };
}

export type IngressStep = Step<InboundMessage, IngressContext, IngressOutcome>;
