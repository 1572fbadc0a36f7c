/** Every persistence port in one place; the Postgres implementations are the sibling files of this folder. */

export type * from './access.js';
export type * from './approvals.js';
export type * from './channel-state.js';
export type * from './console-queries.js';
export type * from './conversations.js';
export type * from './deliveries.js';
export type * from './handoffs.js';
export type * from './inbox.js';
export { senderIdentity } from './inbox.js';
export type * from './ingress-outcomes.js';
export type * from './memory.js';
export type * from './tool-results.js';
export type * from './transcript.js';
export type * from './turn-journal.js';
export type * from './turns.js';
export type * from './webhooks.js';

import type { ConsoleQueries } from './console-queries.js';
import type { ConversationRepository } from './conversations.js';
import type { InboxRepository } from './inbox.js';
import type { MemoryRepository } from './memory.js';
import type { ToolResultRepository } from './tool-results.js';
import type { TranscriptRepository } from './transcript.js';
import type { TurnJournalRepository } from './turn-journal.js';
import type { TurnRepository } from './turns.js';

/** The repositories behind the store facade. */
export interface StoreRepositories {
  inbox: InboxRepository;
  turns: TurnRepository;
  journal: TurnJournalRepository;
  transcript: TranscriptRepository;
  memory: MemoryRepository;
  conversations: ConversationRepository;
  toolResults: ToolResultRepository;
  console: ConsoleQueries;
}

/**
 * The conversation store as core sees it: the facade's methods (each one a
 * repository's), the repositories themselves, and a health probe. The Postgres
 * (and PGlite) implementation is the Store class of adapters/store/store.ts.
 */
export interface GatewayStore
  extends Pick<InboxRepository, 'accept' | 'inboxByExternalId' | 'pending' | 'inboxRow' | 'claimInto' | 'stuckConversations'>,
    Pick<
      TurnRepository,
      'acceptOpening' | 'startTurn' | 'finishTurn' | 'parkTurn' | 'unparkTurn' | 'deferTurn' | 'renewLease' | 'releaseLease' | 'turn' | 'turns'
    >,
    Pick<TurnJournalRepository, 'recordModelStep' | 'recordToolStarted' | 'recordToolFinished' | 'turnJournal'>,
    Pick<TranscriptRepository, 'transcript' | 'messagesAfter' | 'turnReply' | 'searchMessages' | 'saveSummary'>,
    Pick<MemoryRepository, 'addMemory' | 'searchMemory' | 'listMemory' | 'deleteMemory' | 'forgetMemory'>,
    Pick<
      ConversationRepository,
      'conversationByKey' | 'conversation' | 'archiveConversation' | 'conversationStats' | 'waitingCount' | 'setQueueMode' | 'listConversations'
    >,
    Pick<ToolResultRepository, 'saveToolResult' | 'toolResult'> {
  readonly repos: StoreRepositories;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
}
