import type { ChannelPlugin } from '../../src/channel/index.js';
import { type HttpChannelConfig, parseHttpConfig } from './config.js';
import { HttpListener } from './listen.js';
import { parseHttpReplyTo } from './reply-to.js';

/**
 * The OpenAI-compatible API (POST /v1/chat/completions, GET /v1/models) as a channel: its
 * listener mounts the routes, receives each request's message through the same ingress as every
 * channel and follows the turn to answer in the request (SSE or JSON), so it has no deliverer.
 * Always on.
 */
export const plugin: ChannelPlugin<HttpChannelConfig, null> = {
  name: 'http',
  parseConfig: (raw) => parseHttpConfig(raw),
  parseReplyTo: parseHttpReplyTo,
  listener: (cfg) => new HttpListener(cfg),
};
