import { ConfigError } from '../../src/config.js';
import type { ChannelPlugin } from '../../src/channel.js';

/** Placeholder until the sms channel lands: configuring it is an error that says so. */
export const plugin: ChannelPlugin = {
  name: 'sms',
  configure() {
    throw new ConfigError('invalid configuration at "channels.sms": the sms channel is not available in this build yet');
  },
};
