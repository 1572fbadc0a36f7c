/**
 * Human takeover in the operator console (headless Chromium against a real embedded gateway): an
 * operator takes a request for a human from the Handoffs panel, sees the user's messages arrive in
 * the live view, writes to the user and hands back. Attack: markup in the agent's reason and in
 * the user's message shows as text and runs nothing.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HandoffStore } from '../adapters/store/handoffs.js';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { launchChromium } from './support/chromium.js';
import { API_KEY, eventually, openaiClient, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const XSS = '<img src=x onerror="window.__xss=1">';

describe('takeover in the console', () => {
  const llm = new FakeLlm();
  let gw: Gateway;
  let browser: Browser;
  let page: Page;
  const chat = async (text: string) =>
    (await openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': 'console-ho' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: text }],
    })) as any;
  const userReads = async () =>
    ((await (await fetch(`${gw.url}/v1/conversations/console-ho/messages`, { headers: { authorization: `Bearer ${API_KEY}` } })).json()) as any).data as Array<{
      role: string;
      content: string;
    }>;

  beforeAll(async () => {
    await llm.start();
    llm.respond((req) => reply(`agent: ${lastUserText(req.body)}`));
    gw = await startGateway(testConfig(llm, {}));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await gw?.close();
    await llm.close();
  });

  it('the live stream of takeovers is for operator keys only, and carries the messages as they come', async () => {
    expect((await fetch(`${gw.url}/v1/console/handoffs/events`)).status).toBe(401);
    expect((await fetch(`${gw.url}/v1/console/handoffs/events`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(403);
    await chat('first words');
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like 'http/%/console-ho/-'`)).rows[0]!.id;
    const ctl = new AbortController();
    const res = await fetch(`${gw.url}/v1/console/handoffs/events`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` }, signal: ctl.signal });
    const reader = res.body!.getReader();
    let seen = '';
    const until = async (text: string) => {
      while (!seen.includes(text)) seen += new TextDecoder().decode((await reader.read()).value);
    };
    await until(': live');
    const take = await fetch(`${gw.url}/v1/conversations/${conv}/takeover`, { method: 'POST', headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
    expect(take.status).toBe(201);
    await chat('streamed to the operator');
    await until('streamed to the operator');
    expect(seen).toContain('"type":"state"');
    expect(seen).toMatch(/"type":"message".*"role":"user".*"text":"streamed to the operator"/);
    ctl.abort();
    await fetch(`${gw.url}/v1/conversations/${conv}/handback`, { method: 'POST', headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
  });

  it('takes a request, shows the user live, writes to them and hands back; markup stays text', async () => {
    expect((await chat('hello')).choices[0].message.content).toBe('agent: hello');
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like 'http/%/console-ho/-'`)).rows[0]!.id;
    // The agent's request for a human (what request_handoff writes), with markup in its reason.
    await new HandoffStore(gw.infra.store.db).request({
      conversationId: conv,
      reason: `needs a person ${XSS}`,
      urgency: 'high',
      requestedBy: 'agent:t_x',
      slaDeadline: null,
    });

    page = await browser.newPage();
    await page.goto(`${gw.url}/console`);
    await page.fill('#key', TEST_OPERATOR_KEY);
    await page.click('#go');
    const row = await page.waitForSelector(`#handoffs tr[data-conversation="${conv}"][data-state="requested"]`);
    expect(await row.textContent()).toContain(`needs a person ${XSS}`);
    await page.click(`#handoffs button[data-take="${conv}"]`);
    await page.waitForSelector(`#handoffs tr[data-conversation="${conv}"][data-state="taken"]`);

    // The user writes (markup included): not answered by the agent, shown to the operator as text.
    const asked = llm.requests.length;
    await chat(`is someone there? ${XSS}`);
    expect(llm.requests.length).toBe(asked);
    await page.waitForSelector('#holog:has-text("is someone there?")', { timeout: 10_000 });
    expect(await page.textContent('#holog')).toContain(`is someone there? ${XSS}`);
    expect(await page.locator('#handoffs img, #holog img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();

    await page.fill('#hotext', 'Yes, this is Ana from support.');
    await page.click('#hosay');
    await eventually(async () => (await userReads()).find((m) => m.role === 'operator' && m.content === 'Yes, this is Ana from support.'));
    await page.waitForSelector('#holog:has-text("Ana from support")');

    await page.fill('#honote', 'introduced myself');
    await page.click('#hoback');
    await page.waitForSelector('#homsg:has-text("Handed back")');
    await eventually(async () => (await page.locator(`#handoffs tr[data-conversation="${conv}"]`).count()) === 0);
    expect((await chat('back to you')).choices[0].message.content).toBe('agent: back to you');
    expect(JSON.stringify(llm.requests.at(-1)!.body.messages)).toContain('introduced myself');
  });
});
