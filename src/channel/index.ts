/**
 * The channel SDK: the one core module a channel imports (besides kernel/). A channel is a
 * ChannelPlugin (plugin.ts); its listener sees only a ListenContext (listen.ts), its deliverer a
 * TurnTarget and a DeliverContext (deliver.ts). Channels must not import anything else of src/,
 * adapters/, moat/ or app/ (test/channel-boundary.test.ts): what they need is re-exported here.
 */
export type { ChannelPlugin, ChannelInstance, Env } from './plugin.js';
export type {
  ListenContext,
  ChannelListener,
  ChannelRoute,
  RouteContext,
  ReceiveOptions,
  ReceiveOutcome,
  Accepted,
  ApprovalAnswer,
  ApprovalSummary,
  Authentication,
  Principal,
  TurnFollower,
  ChannelState,
  Deliveries,
  DeliveryRecord,
  Leases,
  Lease,
} from './listen.js';
export type { DeliverContext, TurnTarget, Conversation, ChannelDeliverer, TurnDelivery } from './deliver.js';
export { ReplyToError, replyToObject, stringField, optionalString, optionalBoolean, stringArray } from './reply-to.js';
export * from './http.js';

// Configuration errors: parseConfig throws these, naming the key.
export { ConfigError, configError, issueProblems } from '../config.js';
// What people type: approval answers ("YES K7Q4P") and conversation commands ("/new").
export { parseApprovalAnswer, type AnswerDecision } from '../approvals/parse.js';
export { parseCommand, type CommandName } from '../commands.js';
export type { RuleScope } from '../../moat/approval-engine.js';
// How an approval's tool call is shown (shared by every platform's rendering).
export { callParts, fullTextAt, showText } from '../../moat/approval-display.js';
// Outbound HTTP to a URL someone else chose (webhook callbacks): refuses private addresses.
export { safeFetch } from '../../moat/ssrf.js';
// The reply side every deliverer shares: the reply buffer, the post-and-edit engine, the approval card.
export { ReplyBuffer, callStatus, type ReplyChange, type ReplyPart, type ToolCall, type ToolCallState } from './reply-buffer.js';
export { PostAndEdit, deliveriesRecord, type Draft, type EditPlatform, type Part, type PostAndEditOptions, type PostedRecord } from './post-and-edit.js';
export { approvalCard, approvalsText, withApprovalsText, type ApprovalCard, type ApprovalAction } from './approval-card.js';
export { splitFenced } from '../../kernel/text-split.js';
