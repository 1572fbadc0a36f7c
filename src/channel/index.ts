/**
 * The channel SDK: the one core module a channel imports (with the kernel's
 * envelope and turn events, re-exported here).
 */
export type { ChannelPlugin, ChannelInstance } from './plugin.js';
export type { ListenContext, ChannelListener } from './listen.js';
export type { DeliverContext, TurnTarget, ChannelDeliverer, TurnDelivery } from './deliver.js';
