import { ConfigError } from '../../src/config.js';
import type { ChannelPlugin } from '../../src/channel.js';

/** Placeholder until the discord channel lands: configuring it is an error that says so. */
export const plugin: ChannelPlugin = {
  name: 'discord',
  configure() {
    throw new ConfigError('invalid configuration at "channels.discord": the discord channel is not available in this build yet');
  },
};
