/**
 * The operator console in a real browser: headless Chromium (Debian's package)
 * driven by playwright-core. Approvals decided from the page, health and the
 * latency chart shown, a conversation watched live, the web chat answering.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-console-01';
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

describe('operator console', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let browser: Browser;
  beforeAll(async () => {
    if (!CHROMIUM) throw new Error('Chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it');
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      if (msgs.at(-1)!.role === 'tool') return reply('the file is written');
      const t = lastUserText(req.body);
      return t.startsWith('run ') ? toolCall('shell_exec', { command: t.slice(4) }) : reply(`console says hi to ${t}`, 30);
    });
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] } }));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
  });

  it('shows approvals, health and latency; decides an approval; watches a conversation live; chats', async () => {
    // A finished turn (for the chart) and a parked one (for the approvals list).
    for (const m of ['warm up', 'and again'])
      await openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'watched' }).chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content: m }],
      });
    const parked = await openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'needs-ok' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'run echo console >> c.txt' }],
    });
    const code = (parked as any).switchboard.approval.code as string;

    const page = await browser.newPage();
    await page.goto(`${gw.url}/console`);
    await page.fill('#key', 'not-an-operator');
    await page.click('#go');
    await page.waitForSelector('#loginerr:text("not an operator key")');
    await page.fill('#key', OPERATOR_KEY);
    await page.click('#go');
    await page.waitForSelector(`#approvals tr:has-text("${code}")`);
    expect(await page.textContent('#health')).toMatch(/slot openai-compatible \(fake-model\): ready/);
    expect(await page.textContent('#chartlabel')).toMatch(/\d+ turns, max \d+ ms/);
    expect(await page.locator('#chart polyline').count()).toBe(1);

    await page.click(`button[data-code="${code}"][data-decision="approve"]`);
    await page.waitForSelector(`#apprmsg:text("${code} approved")`);
    await eventually(async () => (await gw.infra.approvals.byCode(code))?.status === 'executed');

    // Watch a conversation live while a turn streams into it.
    await page.click('#convs tr[data-id] >> text=watched');
    await page.waitForSelector('#livename:text("watched")');
    await new Promise((r) => setTimeout(r, 300));
    void openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'watched' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'live please' }],
    });
    await eventually(async () => {
      const t = (await page.textContent('#live')) ?? '';
      return t.includes('console says hi to live please') && t.includes('[done: stop]');
    });

    // The web chat.
    await page.fill('#msg', 'from the browser');
    await page.click('#send');
    await eventually(async () => ((await page.textContent('#chatlog')) ?? '').includes('console says hi to from the browser'));
    const shot = await page.screenshot();
    expect(shot.length).toBeGreaterThan(1000);
    await page.close();
  });
});
