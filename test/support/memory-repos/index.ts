/**
 * In-memory fakes of every persistence port (adapters/store/ports/), for unit
 * tests that need a store without a database. They keep the contracts that
 * test/ports.contract.test.ts asserts on Postgres and PGlite too; the SQL
 * behaviour they only approximate (full-text search) is said where it is.
 */
import type { AccessRepository } from '../../../adapters/store/ports/access.js';
import type { ApprovalRepository } from '../../../adapters/store/ports/approvals.js';
import type { ChannelStateRepository } from '../../../adapters/store/ports/channel-state.js';
import type { DeliveryRepository } from '../../../adapters/store/ports/deliveries.js';
import type { WebhookRepository } from '../../../adapters/store/ports/webhooks.js';
import type { StoreRepositories } from '../../../adapters/store/store.js';
import { MemoryApprovals } from './approvals.js';
import { MemoryAccess, MemoryChannelState, MemoryDeliveries, MemoryWebhooks } from './channel-repos.js';
import { MemoryConsoleQueries } from './console-queries.js';
import { MemoryConversations } from './conversations.js';
import { MemoryInbox } from './inbox.js';
import { MemoryNotes } from './memory.js';
import { Tables } from './tables.js';
import { MemoryToolResults } from './tool-results.js';
import { MemoryTranscript } from './transcript.js';
import { MemoryJournal } from './turn-journal.js';
import { MemoryTurns } from './turns.js';

export interface AllRepositories extends StoreRepositories {
  approvals: ApprovalRepository;
  deliveries: DeliveryRepository;
  channelState: ChannelStateRepository;
  access: AccessRepository;
  webhooks: WebhookRepository;
}

/** Every repository over one fresh set of in-memory tables. */
export function memoryRepositories(tables = new Tables()): AllRepositories {
  return {
    inbox: new MemoryInbox(tables),
    turns: new MemoryTurns(tables),
    journal: new MemoryJournal(tables),
    transcript: new MemoryTranscript(tables),
    memory: new MemoryNotes(tables),
    conversations: new MemoryConversations(tables),
    toolResults: new MemoryToolResults(tables),
    console: new MemoryConsoleQueries(tables),
    approvals: new MemoryApprovals(tables),
    deliveries: new MemoryDeliveries(tables),
    channelState: new MemoryChannelState(tables),
    access: new MemoryAccess(tables),
    webhooks: new MemoryWebhooks(tables),
  };
}

export { Tables };
