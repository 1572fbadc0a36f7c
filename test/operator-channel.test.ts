/** Approval requests also posted to an operators' channel (approvals.operatorChannel), with buttons, on Slack. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

process.env.SB_OPCH_SLACK_BOT = BOT_TOKEN;
process.env.SB_OPCH_SLACK_SECRET = SIGNING_SECRET;

describe('the operator channel', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;
  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond((req) => {
      const last = (req.body.messages as Array<{ role: string }>).at(-1)!;
      if (last.role === 'tool') return reply('done');
      const t = lastUserText(req.body);
      return t.startsWith('run: ') ? toolCall('shell_exec', { command: t.slice(5) }) : reply('ok');
    });
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
          channels: { slack: { mode: 'http', apiUrl: slack.apiUrl, botTokenEnv: 'SB_OPCH_SLACK_BOT', signingSecretEnv: 'SB_OPCH_SLACK_SECRET' } },
          approvals: { operators: { slack: ['UOPERATOR'] }, operatorChannel: { channel: 'slack', target: 'COPS' } },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  it('posts a request made over the HTTP API into the operators Slack channel, with Approve/Deny buttons', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'run: echo ops >> o.txt' }] });
    const code = (r as any).switchboard.approval.code as string;
    const posted = await eventually(async () => slack.botMessages('COPS').find((m) => JSON.stringify(m.blocks ?? []).includes(code)));
    const actions = JSON.stringify(posted.blocks);
    expect(actions).toContain('sb_approve');
    expect(actions).toContain('sb_deny');
  });

  it('refuses an operator channel that cannot post requests', async () => {
    await expect(startGateway(testConfig(llm, {}, { approvals: { operatorChannel: { channel: 'sms', target: '+15550000000' } } }))).rejects.toThrow(
      /approvals\.operatorChannel\.channel/,
    );
  });
});

describe('the operator channel on Discord', () => {
  it('posts the request with Approve/Refuse buttons carrying the code', async () => {
    const { FakeDiscord } = await import('./fakes/discord-server.js');
    const { parseDiscordConfig } = await import('../channels/discord/config.js');
    const { DiscordDeliverer } = await import('../channels/discord/deliver.js');
    const fake = new FakeDiscord();
    await fake.start();
    try {
      fake.addGuild('800000000000000001', 'ops', [{ id: '800000000000000002', name: 'approvals' }]);
      const deliverer = new DiscordDeliverer(parseDiscordConfig({ apiBaseUrl: fake.apiUrl }, { DISCORD_BOT_TOKEN: 'fake-bot-token' }));
      await deliverer.notifyApproval(
        '800000000000000002',
        { code: 'K7Q4P', tool: 'shell_exec', tier: 'caution', expiresAt: new Date().toISOString(), args: { command: 'ls' }, reasons: [] },
        'Approval needed — code K7Q4P.',
      );
      const posted = await eventually(async () => fake.botMessages('800000000000000002')[0]);
      expect(posted.content).toContain('K7Q4P');
      expect(JSON.stringify(posted.components)).toContain('sb-approval:approve:K7Q4P');
      await deliverer.close();
    } finally {
      await fake.close();
    }
  });
});
