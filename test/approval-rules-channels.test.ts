/**
 * The approval request as a phone and a Discord channel show it (issue #18):
 * the whole call made visible, ALWAYS (hint or button) only for a call that can
 * become an exact rule, and a rule from one conversation not reaching another.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { parseApprovalCustomId } from '../channels/discord/approvals.js';
import { createLogger } from '../src/log.js';
import { ALICE, APPROVE, OPERATOR as DISCORD_OPERATOR, startWorld, type World } from './fakes/discord-world.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';

const TAR = 'tar -czf backup.tgz *';
const INCIDENT = `${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`;

describe('over SMS', () => {
  const PUBLIC = 'https://sms.example.test/hooks';
  const INBOUND = '/v1/channels/sms/inbound';
  const TWILIO_NUMBER = '+15550100000';
  const OPERATOR = '+15550109999';
  const ANN = '+15550100001';
  const BEN = '+15550100002';
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req: FakeRequest) => {
      const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1)!;
      if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 120)}`);
      const t = lastUserText(req.body);
      return t.startsWith('run: ') ? toolCall('shell_exec', { command: t.slice(5) }) : reply('ok');
    });
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      fake,
      {},
      {
        channels: {
          sms: {
            accountSid: tw.accountSid,
            authTokenEnv: 'SB_RULES_TWILIO_TOKEN',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            sendAttempts: 3,
            retryBaseMs: 20,
            retryMaxMs: 100,
          },
        },
        access: { sms: { policy: 'allowlist', allow: [ANN, BEN] } },
        approvals: { operators: { sms: [OPERATOR] }, timeoutMs: 60_000 },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_RULES_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await fake?.close();
  });

  const text = (from: string, body: string) => tw.webhook(INBOUND, tw.inboundParams({ from, to: TWILIO_NUMBER, body }));
  const received = (to: string) => tw.sentTo(to).map((m) => m.body);
  /** Texts, and returns everything the phone received after it (a long reply comes in parts). */
  const exchange = async (from: string, body: string, until: RegExp) => {
    const before = received(from).length;
    await text(from, body);
    return eventually(async () => {
      const all = received(from).slice(before).join('\n');
      return until.test(all) ? all : null;
    });
  };

  it('shows the chained command behind 300 spaces, offers no ALWAYS, and refuses one', async () => {
    const ask = await exchange(ANN, `run: ${INCIDENT}`, /An operator must approve this \(code [A-Z0-9]{5}\)\.$/);
    expect(ask).toContain('tar -czf backup.tgz *␠×300; truncate -s 0 notes.txt');
    // Ann may not answer her own request: she is told who can, and offered no answer.
    expect(ask).not.toMatch(/ALWAYS|Reply YES/);
    const code = /An operator must approve this \(code ([A-Z0-9]{5})\)/.exec(ask)![1]!;
    const refused = await text(OPERATOR, `ALWAYS ${code}`);
    expect(refused.body).toContain(`"Always allow" is not possible for ${code}: it runs more than one command`);
    const no = await text(OPERATOR, `NO ${code}`);
    expect(no.body).toContain(`${code} refused by ${OPERATOR}.`);
    await eventually(async () => received(ANN).some((b) => /Not approved/.test(b) || b.startsWith('tool said')));
  });

  it('ALWAYS on an exact command holds in that conversation only', async () => {
    const ask = await exchange(ANN, `run: ${TAR}`, /An operator must approve this \(code [A-Z0-9]{5}\)\.$/);
    const code = /An operator must approve this \(code ([A-Z0-9]{5})\)/.exec(ask)![1]!;
    const ok = await text(OPERATOR, `always ${code}`);
    expect(ok.body).toMatch(
      new RegExp(`${code} approved, and always allowed from now on in this conversation \\(rule #\\d+: exactly shell_exec tar -czf backup\\.tgz \\*\\)`),
    );
    await eventually(async () => received(ANN).at(-1)?.startsWith('tool said'));
    // Ann again: runs unasked.
    const again = await exchange(ANN, `run: ${TAR}`, /tool said|An operator must approve/);
    expect(again).toMatch(/^tool said/);
    // Ann, wider: asked.
    expect(await exchange(ANN, `run: ${TAR} --checkpoint=1 --checkpoint-action=exec=sh`, /An operator must approve/)).toMatch(/Approval needed/);
    // Ben (another conversation): asked, the exact command too.
    expect(await exchange(BEN, `run: ${TAR}`, /An operator must approve/)).toMatch(/Approval needed/);
  });
});

describe('on Discord', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(async () => {
    await w?.close();
  });

  const request = async (command: string) => {
    const userMessage = w.fake.userMessage({ channelId: APPROVE, author: ALICE, content: `run: ${command}` });
    const first = await eventually(async () => w.fake.botMessages(APPROVE).find((m) => m.message_reference?.message_id === userMessage));
    const msg = await eventually(async () => w.fake.botMessages(APPROVE).find((m) => BigInt(m.id) >= BigInt(first.id) && m.components.length > 0));
    const ids = (msg.components as Array<{ components: Array<{ custom_id: string }> }>).flatMap((r) => r.components.map((c) => c.custom_id));
    const code = parseApprovalCustomId(ids[0]!)!.code;
    await eventually(async () => (await w.gw.infra.approvals.byCode(code))?.status === 'pending');
    const text = w.fake
      .botMessages(APPROVE)
      .filter((m) => BigInt(m.id) >= BigInt(first.id))
      .map((m) => m.content)
      .join('\n');
    const refuse = async () => {
      const click = w.fake.clickButton({ messageId: msg.id, customId: ids.find((id) => id.includes(':deny:'))!, user: DISCORD_OPERATOR });
      await eventually(async () => w.fake.repliesTo(click)[0]);
      await eventually(async () => (await w.gw.infra.approvals.byCode(code))?.status === 'denied');
      await w.answered(userMessage);
    };
    return { code, text, decisions: ids.map((id) => parseApprovalCustomId(id)!.decision), refuse };
  };

  it('shows an Always allow button only for a call that can become an exact rule', async () => {
    const chained = await request(INCIDENT);
    expect(chained.decisions).toEqual(['approve', 'deny']);
    // (Discord's inbound text arrives with the spaces already collapsed; the chained command shows either way.)
    expect(chained.text).toMatch(/`tar -czf backup\.tgz \*(?: |␠×\d+); truncate -s 0 notes\.txt`/);
    expect(chained.text).not.toMatch(/ALWAYS/);
    await chained.refuse();

    const simple = await request('touch discord.txt');
    expect(simple.decisions).toEqual(['approve', 'deny', 'always']);
    // Alice is no operator: the card says who answers; the buttons are for the operators who see it.
    expect(simple.text).toContain(`An operator must approve this (code ${simple.code}).`);
    await simple.refuse();
  });
});
