import { ConfigError } from '../../src/config.js';
import type { ChannelPlugin } from '../../src/channel.js';

/** Placeholder until the email channel lands: configuring it is an error that says so. */
export const plugin: ChannelPlugin = {
  name: 'email',
  configure() {
    throw new ConfigError('invalid configuration at "channels.email": the email channel is not available in this build yet');
  },
};
