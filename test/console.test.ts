/**
 * The operator console in a real browser: headless Chromium (Debian's package)
 * driven by playwright-core against a real gateway. Login (a wrong key shows
 * nothing of the dashboard), the key never in a URL, conversations with their
 * senders and transcripts, health, approvals decided from the page (the web chat
 * then shows the resumed answer), the latency chart without time parked, the
 * access / webhook / memory / rule / configuration views, and markup in data
 * shown as text.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { launchChromium } from './support/chromium.js';
import { API_KEY, eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-console-01';
const XSS_NAME = '<img src=x onerror="window.__xss=1">';
const XSS_TOOL = '<img src=x onerror="window.__xss=2">';
const XSS_TEXT = '<img src=x onerror="window.__xss=3">';

describe('operator console', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let browser: Browser;
  let shots: string;
  beforeAll(async () => {
    shots = mkdtempSync(join(tmpdir(), 'sb-console-shots-'));
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      if (msgs.at(-1)!.role === 'tool') return reply('the file is written');
      const t = lastUserText(req.body);
      return t.startsWith('run ') ? toolCall('shell_exec', { command: t.slice(4) }) : reply(`console says hi to ${t}`, 30);
    });
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] } }));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
    if (shots) rmSync(shots, { recursive: true, force: true });
  });

  const chat = (conversation: string, content: string) =>
    openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content }],
    });

  /** A screenshot in the test's temp dir: a PNG with something in it. */
  async function screenshot(page: Page, name: string): Promise<void> {
    const path = join(shots, `${name}.png`);
    await page.screenshot({ path, fullPage: true });
    const png = readFileSync(path);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(5000);
  }

  /** Visible to a user: laid out with a size, not display:none. */
  async function visible(page: Page, selector: string): Promise<boolean> {
    const box = await page.locator(selector).first().boundingBox();
    return !!box && box.width > 0 && box.height > 0;
  }

  it('every /v1/console endpoint refuses a user key and no key', async () => {
    const conv = await chat('refusals', 'hello');
    const id = (await gw.infra.store.repos.console.recentConversations(1))[0]!.id;
    expect(conv.choices[0]!.message.content).toContain('console says hi');
    for (const path of ['/v1/console/state', '/v1/console/config', `/v1/console/conversations/${id}/events`, '/v1/console/chat/x/events']) {
      const user = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${API_KEY}` } });
      expect([path, user.status]).toEqual([path, 403]);
      expect(((await user.json()) as { error: { code: string } }).error.code).toBe('not_operator');
      const none = await fetch(`${gw.url}${path}`);
      expect([path, none.status]).toEqual([path, 401]);
      // The old query-parameter key is no longer accepted.
      const query = await fetch(`${gw.url}${path}?key=${OPERATOR_KEY}`);
      expect([path, query.status]).toEqual([path, 401]);
    }
  });

  it('a wrong key shows an error and nothing of the dashboard', async () => {
    const page = await browser.newPage();
    await page.goto(`${gw.url}/console`);
    for (const wrong of ['not-an-operator', API_KEY]) {
      await page.fill('#key', wrong);
      await page.click('#go');
      await page.waitForSelector('#loginerr:text("not an operator key")');
      expect(
        await page
          .locator('#app')
          .evaluate((e) => (globalThis as unknown as { getComputedStyle(e: unknown): { display: string } }).getComputedStyle(e).display),
      ).toBe('none');
      expect(await page.locator('#app').boundingBox()).toBeNull();
      expect(await visible(page, '#approvals')).toBe(false);
      expect(await visible(page, '#key')).toBe(true);
    }
    await screenshot(page, 'wrong-key');
    await page.close();
  });

  it('shows conversations, transcripts, health, approvals and the other views; decides an approval; the web chat shows the resumed answer', async () => {
    // A finished conversation, one with a named sender (markup in the name), and a parked turn (markup in the tool argument).
    for (const m of ['warm up', XSS_TEXT]) await chat('watched', m);
    await gw.infra.store.accept({
      channel: 'http',
      externalId: `xss-${Date.now()}`,
      conversationKey: 'http/-/named-sender/-',
      sender: { id: 'u-named', name: `Ada ${XSS_NAME}` },
      text: 'a message from a named sender',
      attachments: [],
      receivedAt: new Date(),
    });
    const parked = await chat('needs-ok', `run echo ${XSS_TOOL} >> c.txt`);
    const code = (parked as any).switchboard.approval.code as string;
    const rule = await gw.infra.approvals.addRule({
      tool: 'shell_exec',
      pattern: `ls ${XSS_TOOL}`,
      scope: 'global',
      scopeKey: '',
      kind: 'command',
      by: 'test',
    });
    const dangerous = ((await chat('dangerous', 'run HISTFILE=/dev/null ls')) as any).switchboard.approval;
    const exact = ((await chat('exact', 'run touch x.txt')) as any).switchboard.approval;
    await gw.infra.access.requestPairing('sms', '+15550001111', 'PAIR42', 60_000);
    await gw.infra.store.addMemory('global', '', `remember ${XSS_TEXT}`);
    await fetch(`${gw.url}/v1/events/subscribers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'audit-hook', url: 'http://127.0.0.1:9/hook', secretEnv: 'AUDIT_SECRET', events: ['turn.completed'] }),
    });

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(`${gw.url}/console`);
    await page.fill('#key', OPERATOR_KEY);
    await page.click('#go');
    await page.waitForSelector(`#approvals tr[data-approval="${code}"]`);
    expect(await visible(page, '#app')).toBe(true);
    expect(await visible(page, '#login')).toBe(false);

    // The approval: tool, arguments as text, tier, reasons, a countdown, its conversation, the requester.
    const appr = page.locator(`#approvals tr[data-approval="${code}"]`);
    const apprText = (await appr.textContent()) ?? '';
    expect(apprText).toContain('shell_exec');
    expect(apprText).toContain(XSS_TOOL);
    expect(apprText).toMatch(/\d+m \d+s left|\d+s left/);
    expect(apprText).toContain('needs-ok');
    expect(apprText).toMatch(/requested by http:/);
    expect(await appr.locator('ul.reasons li').count()).toBeGreaterThan(0);
    const countdown = await appr.locator('.countdown').textContent();
    await eventually(async () => (await appr.locator('.countdown').textContent()) !== countdown, 5_000);

    // "Always" is offered for an exact call, never for the dangerous tier.
    expect(dangerous.tier).toBe('dangerous');
    await page.waitForSelector(`#approvals tr[data-approval="${dangerous.code}"]:has-text("dangerous")`);
    expect(
      await page.locator(`button[data-code="${dangerous.code}"]`).evaluateAll((bs) => bs.map((b) => (b as unknown as { textContent: string }).textContent)),
    ).toEqual(['Approve', 'Deny']);
    expect(
      await page.locator(`button[data-code="${exact.code}"]`).evaluateAll((bs) => bs.map((b) => (b as unknown as { textContent: string }).textContent)),
    ).toEqual(['Approve', 'Deny', 'Always']);

    // Health from /readyz's operator body and the state endpoint.
    const health = (await page.textContent('#health')) ?? '';
    for (const part of ['ready: yes', 'store: ok', 'queue: ok', 'bus: ok', 'provider: ok', 'slot openai-compatible (fake-model): ready'])
      expect(health).toContain(part);

    // Conversations: channel, sender (display name where known), last activity, state.
    const named = page.locator('#convs tr[data-id]:has-text("named-sender")');
    expect(await named.textContent()).toContain(`Ada ${XSS_NAME}`);
    expect(await page.locator('#convs tr[data-id]:has-text("needs-ok")').getAttribute('data-state')).toBe('parked');
    expect(await page.locator('#convs tr[data-id]:has-text("watched") td').nth(3).textContent()).toMatch(/\d/);

    // The other views.
    await page.waitForSelector('#pairing tr:has-text("PAIR42")');
    await page.waitForSelector('#subscribers tr:has-text("audit-hook")');
    await page.waitForSelector(`#memory tr:has-text("remember")`);
    expect(await page.textContent('#memory')).toContain(XSS_TEXT);
    const config = (await page.textContent('#config')) ?? '';
    expect(config).toContain('"operatorKeys"');
    expect(config).not.toContain(OPERATOR_KEY);
    expect(config).not.toContain(API_KEY);
    await page.click('#pairing button[data-pair="PAIR42"]');
    await page.waitForSelector('#accmsg:text("+15550001111 may talk to the agent now")');
    await page.waitForSelector('#access tr:has-text("+15550001111"):has-text("allowed")');
    await page.fill('#accchannel', 'sms');
    await page.fill('#accsender', '+15550002222');
    await page.click('#accdeny');
    await page.waitForSelector('#access tr:has-text("+15550002222"):has-text("denied")');
    // An "always allow" rule, its pattern as text, deleted from the page.
    expect(await page.textContent(`#rules tr[data-rule="${rule.id}"]`)).toContain(XSS_TOOL);
    await screenshot(page, 'dashboard');
    await page.click(`button[data-delete-rule="${rule.id}"]`);
    await page.waitForSelector(`#rulemsg:text("Rule #${rule.id} deleted")`);
    await page.waitForSelector(`#rules tr[data-rule="${rule.id}"]`, { state: 'detached' });
    expect(await gw.infra.approvals.rule(rule.id)).toBeUndefined();
    for (const sel of ['#approvals', '#health', '#dropped', '#chart', '#convs', '#access', '#norules', '#subscribers', '#memory', '#config', '#chatlog'])
      expect([sel, await visible(page, sel)]).toEqual([sel, true]);
    // Dropped messages by channel and reason (switchboard_messages_dropped_total): none in this gateway yet.
    expect(await page.textContent('#dropped')).toContain('none dropped since this process started');

    // A transcript: the stored messages (markup as text), then live events appended.
    await page.click('#convs tr[data-id]:has-text("watched")');
    await page.waitForSelector('#convname:text("watched")');
    await page.waitForSelector('#transcript:has-text("— live —")');
    expect(await page.textContent('#transcript')).toContain(`console says hi to ${XSS_TEXT}`);
    expect(await page.textContent('#transcript')).toContain('console says hi to warm up');
    void chat('watched', 'live please');
    await eventually(async () => {
      const t = (await page.textContent('#transcript')) ?? '';
      return t.includes('console says hi to live please') && t.includes('[done: stop]');
    });

    // "Always" with a scope: approved, and the rule shows in the list.
    await page.selectOption(`select[data-scope-for="${exact.code}"]`, 'sender');
    await page.click(`button[data-code="${exact.code}"][data-decision="always"]`);
    await page.waitForSelector(`#apprmsg:text("${exact.code} approved")`);
    await page.waitForSelector('#rules tr:has-text("touch x.txt"):has-text("sender http:")');

    // The approval's conversation link opens its transcript.
    await page.click(`#approvals tr[data-approval="${code}"] a`);
    await page.waitForSelector('#convname:text("needs-ok")');

    await page.click(`button[data-code="${code}"][data-decision="approve"]`);
    await page.waitForSelector(`#apprmsg:text("${code} approved")`);
    await eventually(async () => (await gw.infra.approvals.byCode(code))?.status === 'executed');

    // The web chat: a tool call parks for approval; approved in the console, its answer appears in the chat.
    await page.fill('#msg', 'from the browser');
    await page.click('#send');
    await eventually(async () => ((await page.textContent('#chatlog')) ?? '').includes('console says hi to from the browser'));
    await page.fill('#msg', 'run echo from-chat >> d.txt');
    await page.click('#send');
    await page.waitForSelector('#chatlog:has-text("[waiting for approval]")');
    const chatCode = await eventually(async () => (await gw.infra.approvals.pending()).find((a) => JSON.stringify(a.args).includes('from-chat'))?.code);
    await page.waitForSelector(`#approvals tr[data-approval="${chatCode}"]`);
    // Parked for a while: that wait is not latency.
    await new Promise((r) => setTimeout(r, 3_000));
    await page.click(`button[data-code="${chatCode}"][data-decision="approve"]`);
    await eventually(async () => ((await page.textContent('#chatlog')) ?? '').includes('the file is written'), 20_000);

    // The latency chart: the resumed turn's 3 s wait is left out (counted, it would be the chart's maximum or more).
    const convId = (await gw.infra.store.repos.console.recentConversations(30)).find((c) => c.key.includes('console-'))!.id;
    const resumed = (await gw.infra.store.turns(convId)).find((t) => t.finishedAt && t.finishedAt.getTime() - t.startedAt.getTime() >= 3_000);
    expect(resumed).toBeDefined();
    const raw = resumed!.finishedAt!.getTime() - resumed!.startedAt.getTime();
    const timed = (await gw.infra.store.repos.console.turnLatencies(60)).find((l) => l.finishedAt.getTime() === resumed!.finishedAt!.getTime());
    expect(timed!.parkedMs).toBeGreaterThanOrEqual(2_900);
    const state = (await (await fetch(`${gw.url}/v1/console/state`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } })).json()) as {
      latencies: number[];
    };
    expect(state.latencies).toContain(Math.round(raw - timed!.parkedMs));
    expect(Math.max(...state.latencies)).toBeLessThan(raw);
    await page.waitForSelector('#chart polyline');
    expect(await page.textContent('#chartlabel')).toMatch(/\d+ turns, max \d+ ms/);

    // Markup in a name, a message, a tool argument or a note ran nothing and made no element.
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    // The operator key never travelled in a URL.
    expect(urls.length).toBeGreaterThan(10);
    expect(urls.filter((u) => u.includes(OPERATOR_KEY) || u.includes(encodeURIComponent(OPERATOR_KEY)))).toEqual([]);
    await screenshot(page, 'after-approval');
    await page.close();
  });
});
