/**
 * The channel SDK: the one core module a channel imports (with the kernel's
 * envelope and turn events, re-exported here).
 */
export type { ChannelPlugin, ChannelInstance } from './plugin.js';
export type { ListenContext, ChannelListener } from './listen.js';
export type { DeliverContext, TurnTarget, ChannelDeliverer, TurnDelivery } from './deliver.js';
export { ReplyBuffer, callStatus, type ReplyChange, type ReplyPart, type ToolCall, type ToolCallState } from './reply-buffer.js';
export { PostAndEdit, deliveriesRecord, type Draft, type EditPlatform, type Part, type PostAndEditOptions, type PostedRecord } from './post-and-edit.js';
export { approvalCard, approvalsText, withApprovalsText, type ApprovalCard, type ApprovalAction } from './approval-card.js';
export { splitFenced } from '../../kernel/text-split.js';
