import { ConfigError } from '../../src/config.js';
import type { ChannelPlugin } from '../../src/channel.js';

/** Placeholder until the slack channel lands: configuring it is an error that says so. */
export const plugin: ChannelPlugin = {
  name: 'slack',
  configure() {
    throw new ConfigError('invalid configuration at "channels.slack": the slack channel is not available in this build yet');
  },
};
