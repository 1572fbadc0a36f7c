import type { Db } from '../db/port.js';
import { ConsoleQueryStore } from './console-queries.js';
import { ConversationStore } from './conversations.js';
import { InboxStore } from './inbox.js';
import { MemoryNoteStore } from './memory.js';
import type { ConversationRepository } from './ports/conversations.js';
import type { InboxRepository } from './ports/inbox.js';
import type { GatewayStore, StoreRepositories } from './ports/index.js';
import type { MemoryRepository } from './ports/memory.js';
import type { ToolResultRepository } from './ports/tool-results.js';
import type { TranscriptRepository } from './ports/transcript.js';
import type { TurnJournalRepository } from './ports/turn-journal.js';
import type { TurnRepository } from './ports/turns.js';
import { ToolResultStore } from './tool-results.js';
import { TranscriptStore } from './transcript.js';
import { TurnJournalStore } from './turn-journal.js';
import { TurnStore } from './turns.js';

export type { ConversationRecord, ConversationStats } from './ports/conversations.js';
// The record types and helpers, where every importer of the store finds them.
export type { AcceptResult, InboxMessage } from './ports/inbox.js';
export type { GatewayStore, StoreRepositories } from './ports/index.js';
export type { MemoryScope } from './ports/memory.js';
export type { MessageHit, StoredMessage, TranscriptEntry } from './ports/transcript.js';
export type { JournalFence, ModelStep, ToolStep, ToolStepResult, TurnJournal } from './ports/turn-journal.js';
export type { FinishTurn, StartContext, StartedTurn, StartTurn, TurnRecord } from './ports/turns.js';
export { assistantText, senderIdentity } from './rows.js';

/** The Postgres (and PGlite) implementation of every repository of the facade, over one database. */
export function postgresRepositories(db: Db): StoreRepositories {
  return {
    inbox: new InboxStore(db),
    turns: new TurnStore(db),
    journal: new TurnJournalStore(db),
    transcript: new TranscriptStore(db),
    memory: new MemoryNoteStore(db),
    conversations: new ConversationStore(db),
    toolResults: new ToolResultStore(db),
    console: new ConsoleQueryStore(db),
  };
}

type Args<R, K extends keyof R> = R[K] extends (...a: infer A) => unknown ? A : never;

/**
 * The facade over the conversation repositories, with the methods the store
 * had before it was split (each delegates to one repository), so callers can
 * move to the repositories (`store.repos.inbox`...) one at a time.
 * All SQL is in the repository files and runs unchanged on Postgres and PGlite.
 */
export class Store implements GatewayStore {
  readonly repos: StoreRepositories;

  /** Present when the turn repository has it (ports/turns.ts). */
  readonly acceptOpening?: TurnRepository['acceptOpening'];

  constructor(
    readonly db: Db,
    repos?: StoreRepositories,
  ) {
    this.repos = repos ?? postgresRepositories(db);
    const turns = this.repos.turns;
    if (turns.acceptOpening) this.acceptOpening = (...a) => turns.acceptOpening!(...a);
  }

  // inbox
  accept(...a: Args<InboxRepository, 'accept'>) {
    return this.repos.inbox.accept(...a);
  }
  inboxByExternalId(...a: Args<InboxRepository, 'inboxByExternalId'>) {
    return this.repos.inbox.inboxByExternalId(...a);
  }
  pending(...a: Args<InboxRepository, 'pending'>) {
    return this.repos.inbox.pending(...a);
  }
  inboxRow(...a: Args<InboxRepository, 'inboxRow'>) {
    return this.repos.inbox.inboxRow(...a);
  }
  claimInto(...a: Args<InboxRepository, 'claimInto'>) {
    return this.repos.inbox.claimInto(...a);
  }
  stuckConversations(...a: Args<InboxRepository, 'stuckConversations'>) {
    return this.repos.inbox.stuckConversations(...a);
  }

  // turns and the drain's lease
  startTurn(...a: Args<TurnRepository, 'startTurn'>) {
    return this.repos.turns.startTurn(...a);
  }
  finishTurn(...a: Args<TurnRepository, 'finishTurn'>) {
    return this.repos.turns.finishTurn(...a);
  }
  parkTurn(...a: Args<TurnRepository, 'parkTurn'>) {
    return this.repos.turns.parkTurn(...a);
  }
  unparkTurn(...a: Args<TurnRepository, 'unparkTurn'>) {
    return this.repos.turns.unparkTurn(...a);
  }
  deferTurn(...a: Args<TurnRepository, 'deferTurn'>) {
    return this.repos.turns.deferTurn(...a);
  }
  renewLease(...a: Args<TurnRepository, 'renewLease'>) {
    return this.repos.turns.renewLease(...a);
  }
  releaseLease(...a: Args<TurnRepository, 'releaseLease'>) {
    return this.repos.turns.releaseLease(...a);
  }
  turn(...a: Args<TurnRepository, 'turn'>) {
    return this.repos.turns.turn(...a);
  }
  turns(...a: Args<TurnRepository, 'turns'>) {
    return this.repos.turns.turns(...a);
  }

  // the step journal of running turns
  recordModelStep(...a: Args<TurnJournalRepository, 'recordModelStep'>) {
    return this.repos.journal.recordModelStep(...a);
  }
  recordToolStarted(...a: Args<TurnJournalRepository, 'recordToolStarted'>) {
    return this.repos.journal.recordToolStarted(...a);
  }
  recordToolFinished(...a: Args<TurnJournalRepository, 'recordToolFinished'>) {
    return this.repos.journal.recordToolFinished(...a);
  }
  turnJournal(...a: Args<TurnJournalRepository, 'turnJournal'>) {
    return this.repos.journal.turnJournal(...a);
  }

  // transcript
  transcript(...a: Args<TranscriptRepository, 'transcript'>) {
    return this.repos.transcript.transcript(...a);
  }
  messagesAfter(...a: Args<TranscriptRepository, 'messagesAfter'>) {
    return this.repos.transcript.messagesAfter(...a);
  }
  turnReply(...a: Args<TranscriptRepository, 'turnReply'>) {
    return this.repos.transcript.turnReply(...a);
  }
  searchMessages(...a: Args<TranscriptRepository, 'searchMessages'>) {
    return this.repos.transcript.searchMessages(...a);
  }
  saveSummary(...a: Args<TranscriptRepository, 'saveSummary'>) {
    return this.repos.transcript.saveSummary(...a);
  }

  // memory
  addMemory(...a: Args<MemoryRepository, 'addMemory'>) {
    return this.repos.memory.addMemory(...a);
  }
  searchMemory(...a: Args<MemoryRepository, 'searchMemory'>) {
    return this.repos.memory.searchMemory(...a);
  }
  listMemory(...a: Args<MemoryRepository, 'listMemory'>) {
    return this.repos.memory.listMemory(...a);
  }
  deleteMemory(...a: Args<MemoryRepository, 'deleteMemory'>) {
    return this.repos.memory.deleteMemory(...a);
  }
  forgetMemory(...a: Args<MemoryRepository, 'forgetMemory'>) {
    return this.repos.memory.forgetMemory(...a);
  }

  // conversations
  conversationByKey(...a: Args<ConversationRepository, 'conversationByKey'>) {
    return this.repos.conversations.conversationByKey(...a);
  }
  conversation(...a: Args<ConversationRepository, 'conversation'>) {
    return this.repos.conversations.conversation(...a);
  }
  archiveConversation(...a: Args<ConversationRepository, 'archiveConversation'>) {
    return this.repos.conversations.archiveConversation(...a);
  }
  conversationStats(...a: Args<ConversationRepository, 'conversationStats'>) {
    return this.repos.conversations.conversationStats(...a);
  }
  waitingCount(...a: Args<ConversationRepository, 'waitingCount'>) {
    return this.repos.conversations.waitingCount(...a);
  }
  setQueueMode(...a: Args<ConversationRepository, 'setQueueMode'>) {
    return this.repos.conversations.setQueueMode(...a);
  }
  listConversations(...a: Args<ConversationRepository, 'listConversations'>) {
    return this.repos.conversations.listConversations(...a);
  }

  // tool results
  saveToolResult(...a: Args<ToolResultRepository, 'saveToolResult'>) {
    return this.repos.toolResults.saveToolResult(...a);
  }
  toolResult(...a: Args<ToolResultRepository, 'toolResult'>) {
    return this.repos.toolResults.toolResult(...a);
  }

  async ping(): Promise<void> {
    await this.db.query('select 1');
  }
}
