/**
 * The channel SDK: the one core module a channel imports (besides kernel/). A channel is a
 * ChannelPlugin (plugin.ts); its listener sees only a ListenContext (listen.ts), its deliverer a
 * TurnTarget and a DeliverContext (deliver.ts). Channels must not import anything else of src/,
 * adapters/, moat/ or app/ (test/channel-boundary.test.ts): what they need is re-exported here.
 */

export { splitFenced } from '../../kernel/text-split.js';
// How an approval's tool call is shown (shared by every platform's rendering).
export { callParts, fullTextAt, showText } from '../../moat/approval-display.js';
export type { RuleScope } from '../../moat/approval-engine.js';
// Outbound HTTP to a URL someone else chose (webhook callbacks): refuses private addresses.
export { safeFetch } from '../../moat/ssrf.js';
// What people type: approval answers ("YES K7Q4P") and conversation commands ("/new").
export { type AnswerDecision, parseApprovalAnswer } from '../approvals/parse.js';
export { type CommandName, parseCommand } from '../commands.js';
// Configuration errors: parseConfig throws these, naming the key.
export { ConfigError, configError, issueProblems } from '../config.js';
export { type OperatorCommand, parseOperatorCommand } from '../handoffs/text.js';
// Group-chat manners: the facts a channel computes, the policy (channels.<name>.groups), the rules.
export {
  type Addressed,
  type AddressFacts,
  addressedToMe,
  botNames,
  type GroupsPolicy,
  groupsSchema,
  type IgnoreReason,
  nameAtLineStart,
  type RespondIn,
  type RoomDecision,
  type RoomQuestion,
} from './addressed.js';
export { type ApprovalAction, type ApprovalCard, approvalCard, approvalsText, withApprovalsText } from './approval-card.js';
// What was sent while the gateway was down: the shared catchUp setting, the pure decision, the cursors.
export {
  CatchUpCursors,
  type CatchUpPlan,
  type CatchUpPolicy,
  type CatchUpSkip,
  catchUpSchema,
  compareSlackTs,
  compareSnowflakes,
  DEFAULT_OFFLINE_REPLY,
  type MissedMessage,
  offlineReplyText,
  planCatchUp,
} from './catch-up.js';
export type { ChannelDeliverer, Conversation, DeliverContext, TurnDelivery, TurnTarget } from './deliver.js';
// A reply a channel could not deliver: retryable (the delivery queue tries again) or refused (dead letter).
export { ChannelDeliveryError } from './delivery-error.js';
export * from './http.js';
export {
  checkImageBytes,
  DEFAULT_MAX_IMAGE_BYTES,
  declaredTooLarge,
  fetchImageAttachment,
  type ImageFetch,
  type ImageSource,
  looksLikeImage,
  noted as notShownAttachment,
} from './image-attachment.js';
export { sniffImageType } from './image-type.js';
export type {
  Accepted,
  ApprovalAnswer,
  ApprovalSummary,
  Authentication,
  ChannelListener,
  ChannelRoute,
  ChannelState,
  Deliveries,
  DeliveryRecord,
  Lease,
  Leases,
  ListenContext,
  Principal,
  ReceiveOptions,
  ReceiveOutcome,
  RouteContext,
  TurnFollower,
} from './listen.js';
export type { ChannelInstance, ChannelPlugin, ChannelProbe, Env } from './plugin.js';
export { type Draft, deliveriesRecord, type EditPlatform, type Part, PostAndEdit, type PostAndEditOptions, type PostedRecord } from './post-and-edit.js';
// The reply side every deliverer shares: the reply buffer, the post-and-edit engine, the approval card.
export { callStatus, ReplyBuffer, type ReplyChange, type ReplyPart, type ToolCall, type ToolCallState } from './reply-buffer.js';
export { optionalBoolean, optionalString, ReplyToError, replyToObject, stringArray, stringField } from './reply-to.js';
export type { ChannelSetup, SetupCheck, SetupQuestion, SetupSecret } from './setup.js';
export { TypingIndicator, type TypingOptions } from './typing-indicator.js';
