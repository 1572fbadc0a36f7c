import type { ChannelSetup } from '../../src/channel/index.js';

/**
 * The bot's permissions: View Channels (1<<10), Send Messages (1<<11), Read Message History (1<<16),
 * Send Messages in Threads (1<<38). Nothing else: no admin, no manage.
 */
export const DISCORD_PERMISSIONS = (1n << 10n) | (1n << 11n) | (1n << 16n) | (1n << 38n);

/** The OAuth2 URL that adds the bot to a server with those permissions and the slash commands. */
export function discordInviteUrl(applicationId: string): string {
  // The placeholder stays readable (not percent-encoded) until the id is known.
  const id = /^\d+$/.test(applicationId) ? applicationId : '<APPLICATION_ID>';
  return `https://discord.com/oauth2/authorize?client_id=${id}&scope=bot+applications.commands&permissions=${DISCORD_PERMISSIONS}`;
}

export const setup: ChannelSetup = {
  questions: [
    {
      flag: 'discord-app-id',
      prompt: 'Discord: the Application ID (Developer Portal > General Information; blank to fill in later)',
      default: '',
      validate: (v) => (/^\d{15,22}$/.test(v) ? undefined : 'expected the numeric Application ID (a snowflake, 15 to 22 digits)'),
    },
  ],
  config: () => ({}),
  secrets: () => [{ name: 'DISCORD_BOT_TOKEN', hint: 'Discord: the bot token, Developer Portal > Bot > Reset Token' }],
  guide(a) {
    return [
      'Discord',
      '1. https://discord.com/developers/applications > New Application; note the Application ID (General Information).',
      '2. Bot > Reset Token: put the token in DISCORD_BOT_TOKEN in .env.',
      '3. Bot > Privileged Gateway Intents: turn on MESSAGE CONTENT INTENT (without it the gateway refuses to start:',
      '   Discord sends message text to mentioned bots and DMs only). The other intents it uses (Guilds, Guild Messages,',
      '   Direct Messages) need no switch.',
      `4. Add the bot to your server: ${discordInviteUrl(a['discord-app-id'] ?? '')}`,
      '   (permissions: View Channels, Send Messages, Send Messages in Threads, Read Message History; scopes: bot, applications.commands)',
      '5. Your user id (User Settings > Advanced > Developer Mode, then right-click your name > Copy User ID): add it to',
      '   access.discord.allow and approvals.operators.discord, or answer the pairing code with `switchboard access approve CODE`.',
      '6. Start the gateway, then mention the bot in a channel it can see, or send it a DM.',
    ].join('\n');
  },
};
