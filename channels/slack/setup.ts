import type { ChannelSetup } from '../../src/channel/index.js';

/** Bot scopes the channel uses: replies, display names, DMs, mentions, thread replies without a mention. */
export const SLACK_BOT_SCOPES = ['app_mentions:read', 'channels:history', 'chat:write', 'groups:history', 'im:history', 'users:read'];
/** The events those scopes carry (message.* for replies in a thread the bot is in). */
export const SLACK_BOT_EVENTS = ['app_mention', 'message.channels', 'message.groups', 'message.im'];

/** The app manifest (YAML) for api.slack.com/apps → Create New App → From a manifest. */
export function slackManifest(a: { name: string; mode: 'socket' | 'http'; publicUrl?: string; eventsPath?: string }): string {
  const url = a.mode === 'http' ? `${(a.publicUrl ?? 'https://YOUR-PUBLIC-HOST').replace(/\/+$/, '')}${a.eventsPath ?? '/slack/events'}` : undefined;
  const lines = [
    'display_information:',
    `  name: ${a.name}`,
    'features:',
    '  app_home:',
    '    messages_tab_enabled: true',
    '    messages_tab_read_only_enabled: false',
    '  bot_user:',
    `    display_name: ${a.name}`,
    '    always_online: true',
    'oauth_config:',
    '  scopes:',
    '    bot:',
    ...SLACK_BOT_SCOPES.map((s) => `      - ${s}`),
    'settings:',
    '  event_subscriptions:',
    ...(url ? [`    request_url: ${url}`] : []),
    '    bot_events:',
    ...SLACK_BOT_EVENTS.map((e) => `      - ${e}`),
    '  interactivity:',
    '    is_enabled: true',
    ...(url ? [`    request_url: ${url}`] : []),
    '  org_deploy_enabled: false',
    `  socket_mode_enabled: ${a.mode === 'socket'}`,
    '  token_rotation_enabled: false',
  ];
  return `${lines.join('\n')}\n`;
}

export const setup: ChannelSetup = {
  questions: [
    {
      flag: 'slack-mode',
      prompt: 'Slack: Socket Mode (no public URL needed) or HTTP Events (socket/http)',
      default: 'socket',
      validate: (v) => (v === 'socket' || v === 'http' ? undefined : 'expected socket or http'),
    },
    { flag: 'slack-name', prompt: 'Slack: the app and bot name', default: 'Switchboard' },
  ],
  config: (a) => (a['slack-mode'] === 'http' ? { mode: 'http' } : { mode: 'socket' }),
  secrets: (a) => [
    { name: 'SLACK_BOT_TOKEN', hint: 'Slack: the Bot User OAuth Token (xoxb-…), OAuth & Permissions after installing the app' },
    a['slack-mode'] === 'http'
      ? { name: 'SLACK_SIGNING_SECRET', hint: 'Slack: the Signing Secret, Basic Information > App Credentials' }
      : { name: 'SLACK_APP_TOKEN', hint: 'Slack: an app-level token (xapp-…) with the connections:write scope, Basic Information > App-Level Tokens' },
  ],
  guide(a) {
    const mode = a['slack-mode'] === 'http' ? 'http' : 'socket';
    const manifest = slackManifest({ name: a['slack-name'] || 'Switchboard', mode, ...(a['public-url'] ? { publicUrl: a['public-url'] } : {}) });
    const token =
      mode === 'socket'
        ? '3. Basic Information > App-Level Tokens > Generate Token and Scopes: add the scope connections:write; put the xapp-… token in SLACK_APP_TOKEN.'
        : `3. Basic Information > App Credentials: put the Signing Secret in SLACK_SIGNING_SECRET. The gateway must answer at ${a['public-url'] || '<public URL>'}/slack/events (events and interactivity).`;
    return [
      'Slack',
      '1. https://api.slack.com/apps > Create New App > From a manifest > choose the workspace > paste this manifest (YAML):',
      '',
      manifest.replace(/^/gm, '    ').trimEnd(),
      '',
      '2. Install to Workspace; put the Bot User OAuth Token (xoxb-…) in SLACK_BOT_TOKEN in .env.',
      token,
      '4. Your member id (your Slack profile > ⋮ > Copy member ID, U…): add it to access.slack.allow and approvals.operators.slack',
      '   in the configuration file, or answer the pairing code with `switchboard access approve CODE` (policy pairing).',
      '5. Start the gateway, then send the bot a DM, or invite it to a channel (/invite @name) and mention it.',
    ].join('\n');
  },
};
