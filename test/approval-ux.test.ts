/**
 * What a requester is told about an approval (issue #22): who can approve it,
 * and, for a message sent while the turn waits for one, that it waits. A real
 * gateway (embedded) with the fake LLM, the fake Slack over Socket Mode, and
 * the HTTP API; the wording rules as units.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alwaysOffered } from '../app/cli/chat-gateway.js';
import type { Gateway } from '../app/gateway.js';
import { requesterMayAnswer } from '../src/approvals/rights.js';
import { approvalCard } from '../src/channel/approval-card.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { API_KEY, eventually, readyz, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

process.env.SB_UX_SLACK_BOT = BOT_TOKEN;
process.env.SB_UX_SLACK_APP = APP_TOKEN;

const OPERATOR = 'UOPERATOR';
const WAITING = (code: string) => `Waiting for an operator to approve ${code} (tool shell_exec); your message will be answered after that.`;

describe('the approval request says who can approve it', () => {
  const info = { code: 'K7Q4P', tool: 'shell_exec', tier: 'caution', expiresAt: new Date().toISOString(), args: { command: 'ls' }, reasons: [] };

  it('tells a requester who may not approve that an operator must, and keeps YES/NO for one who may', () => {
    const not = approvalCard({ ...info, alwaysPermitted: true, selfApprovable: false });
    expect(not.fallback).toContain('An operator must approve this (code K7Q4P).');
    expect(not.fallback).not.toMatch(/Reply YES|ALWAYS/);
    expect(not.hint).toBe('An operator must approve this (code K7Q4P).');
    const may = approvalCard({ ...info, alwaysPermitted: true, selfApprovable: true });
    expect(may.fallback).toContain('Reply YES K7Q4P to approve or NO K7Q4P to refuse');
    expect(may.fallback).not.toContain('An operator must');
  });

  it('follows the rules answers are judged by: operators always, requesters at the tiers of requesterMay, never dangerous', () => {
    const cfg = { operators: { slack: ['UOP'] }, requesterMay: ['caution' as const] };
    expect(requesterMayAnswer(cfg, 'slack:T1:UOP', 'dangerous')).toBe(true);
    expect(requesterMayAnswer(cfg, 'slack:T1:UALICE', 'caution')).toBe(true);
    expect(requesterMayAnswer(cfg, 'slack:T1:UALICE', 'dangerous')).toBe(false);
    expect(requesterMayAnswer({ operators: {}, requesterMay: [] }, 'slack:T1:UALICE', 'caution')).toBe(false);
    expect(requesterMayAnswer(cfg, 'http:op:abc', 'dangerous')).toBe(true); // an operator API key
    expect(requesterMayAnswer(cfg, null, 'caution')).toBe(false);
  });

  it('the terminal chat offers [a]lways only for a call that can become a rule, never for the dangerous tier', () => {
    const a = { code: 'K7Q4P', tool: 'shell_exec', expiresAt: '' };
    expect(alwaysOffered({ ...a, tier: 'caution', alwaysPermitted: true })).toBe(true);
    expect(alwaysOffered({ ...a, tier: 'dangerous', alwaysPermitted: true })).toBe(false);
    expect(alwaysOffered({ ...a, tier: 'caution' })).toBe(false);
  });
});

describe('approvals seen by the requester, end to end', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack({ pingMs: 300 });
    await Promise.all([llm.start(), slack.start()]);
    llm.respond((req: FakeRequest) => {
      const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1)!;
      if (last.role === 'tool') return reply('tool said: done');
      const t = lastUserText(req.body);
      const run = /run: (.+)$/.exec(t);
      return run ? toolCall('shell_exec', { command: run[1] }) : reply(`you said: ${t}`);
    });
    slack.users.set('UALICE', { id: 'UALICE', name: 'alice' });
    slack.users.set(OPERATOR, { id: OPERATOR, name: 'olga' });
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
          channels: {
            slack: {
              mode: 'socket',
              apiUrl: slack.apiUrl,
              botTokenEnv: 'SB_UX_SLACK_BOT',
              appTokenEnv: 'SB_UX_SLACK_APP',
              silenceMs: 1_500,
              streamIntervalMs: 100,
            },
          },
          access: { slack: { policy: 'open' } },
          approvals: { operators: { slack: [OPERATOR] }, timeoutMs: 120_000 },
        },
      ),
    );
    await eventually(async () => ((await (await readyz(gw.url!)).json()) as any).checks['channel:slack']?.ok === true, 15_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  const event = (ev: unknown) => slack.sendEnvelope('events_api', slack.eventBody(ev));
  const llmSaw = (text: string) => llm.requests.some((r) => lastUserText(r.body) === text);

  it('on Slack: "An operator must approve", then a message sent meanwhile is told at once that it waits', async () => {
    await event(slack.userMessage({ user: 'UALICE', channel: 'D7', text: 'run: echo ux >> ux.txt' }));
    const request = await eventually(async () => slack.botMessages('D7').find((m) => m.blocks?.some((b) => b.type === 'actions')), 20_000);
    const code = (request.blocks!.find((b) => b.type === 'actions')!.elements[0] as { value: string }).value;
    // Alice is no operator and approvals.requesterMay is empty: not "Reply APPROVE".
    expect(request.text).toContain(`An operator must approve this (code ${code}).`);
    expect(request.text).not.toMatch(/Reply/);
    expect(JSON.stringify(request.blocks)).toContain('An operator must approve this');
    await eventually(async () => (await gw.infra.approvals.byCode(code))?.status === 'pending');
    await eventually(async () => (await gw.infra.store.db.query(`select 1 from turns where status = 'parked'`)).rows.length > 0);

    const started = Date.now();
    await event(slack.userMessage({ user: 'UALICE', channel: 'D7', text: 'are you still there?' }));
    const notice = await eventually(async () => slack.botMessages('D7').find((m) => m.text.startsWith('Waiting for')), 10_000);
    expect(notice.text).toBe(WAITING(code));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(llmSaw('are you still there?')).toBe(false); // it waits in the inbox

    // The operator approves: the turn goes on, then the waiting message is answered.
    await slack.sendEnvelope(
      'interactive',
      slack.blockAction({ user: OPERATOR, message: slack.messages.get(request.ts)!, actionId: 'sb_approve', value: code }),
    );
    await eventually(async () => slack.botMessages('D7').some((m) => !m.streaming && /tool said: done/.test(m.text)), 20_000);
    await eventually(async () => slack.botMessages('D7').some((m) => !m.streaming && /you said: are you still there\?/.test(m.text)), 20_000);
  });

  it('over the HTTP API: the waiting notice at once, as the answer of a plain request and first in a streamed one', async () => {
    const post = (content: string, stream: boolean, key = API_KEY, conversation = 'ux-http') =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-switchboard-conversation': conversation },
        body: JSON.stringify({ model: 'default', stream, messages: [{ role: 'user', content }] }),
      });
    const parkedRes = (await (await post('run: echo http >> http.txt', false)).json()) as any;
    const code = parkedRes.switchboard.approval.code as string;
    expect(parkedRes.choices[0].message.content).toContain(`An operator must approve this (code ${code}).`);
    expect(parkedRes.choices[0].message.content).not.toContain('Reply YES');
    expect(parkedRes.switchboard.approval.selfApprovable).toBe(false);

    // A plain request: answered with the notice right away; the message is kept for later.
    const started = Date.now();
    const plain = await post('first while parked', false);
    expect(plain.status).toBe(200);
    const body = (await plain.json()) as any;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(body.choices[0].message.content).toBe(WAITING(code));
    expect(body.switchboard).toMatchObject({ conversation: 'ux-http', queued: true, notice: WAITING(code) });

    // A streamed request: the notice first, then (after the approval) its own answer.
    const streamed = await post('second while parked', true);
    const reader = streamed.body!.getReader();
    const decoder = new TextDecoder();
    let sse = '';
    const readUntil = async (re: RegExp) => {
      while (!re.test(sse)) {
        const { done, value } = await reader.read();
        if (done) break;
        sse += decoder.decode(value, { stream: true });
      }
      return sse;
    };
    await readUntil(/Waiting for an operator/);
    const chunks = () =>
      sse
        .split('\n\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)));
    const noticeChunk = chunks().find((c) => c.switchboard?.notice);
    expect(noticeChunk.switchboard.notice).toBe(WAITING(code));
    expect(noticeChunk.choices[0].delta.content).toBe(WAITING(code));
    expect(llmSaw('second while parked')).toBe(false);

    const ok = await fetch(`${gw.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(ok.status).toBe(200);
    await readUntil(/\[DONE\]/);
    const content = chunks()
      .map((c) => c.choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(content.startsWith(WAITING(code))).toBe(true);
    expect(content).toMatch(/you said: (first|second) while parked/);
  });

  it('over the HTTP API: a requester who may approve (an operator key) keeps the YES/NO wording', async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': 'ux-op' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'run: echo op >> op.txt' }] }),
    });
    const body = (await r.json()) as any;
    const code = body.switchboard.approval.code as string;
    expect(body.choices[0].message.content).toContain(`Reply YES ${code} to approve or NO ${code} to refuse`);
    expect(body.choices[0].message.content).not.toContain('An operator must');
    await fetch(`${gw.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'deny' }),
    });
  });
});
