/**
 * Schedules in the operator console (headless Chromium against a real embedded gateway): an
 * operator schedules a message from the page, sees it delivered, and sees a run whose reply the
 * delivery queue gave up on marked undelivered — the callback really failed, no row was edited.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { launchChromium } from './support/chromium.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { WebhookHook } from './support/webhook-hook.js';

/** Markup in a schedule's prompt: shown as text, never run. */
const XSS = '<img src=x onerror="window.__xss=1">';

describe('schedules in the console', () => {
  const fake = new FakeLlm();
  const hook = new WebhookHook('shop', 'console-schedules-secret-012345678', 'SB_CONSOLE_SCHED_SECRET');
  let gw: Gateway;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    await Promise.all([fake.start(), hook.start()]);
    fake.respond((req) => reply(lastUserText(req.body).includes('Restock') ? 'Restock the shelves today.' : 'welcome'));
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          channels: { webhook: { hooks: [hook.config()], callbackAttempts: 2, callbackBackoffMs: 50 } },
          schedules: { pollMs: 100 },
          // The delivery queue's retry after a short pause (5 s by default), so the dead letter comes quickly.
          queue: { deliveryAttempts: 2, deliveryBackoffMs: 200 },
        },
      ),
    );
    browser = await launchChromium();
  });
  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await gw?.close();
    await Promise.all([fake.close(), hook.close()]);
  });

  const schedule = async (at: string) => {
    await page.fill('#schconv', 'webhook/shop/store-7/-');
    await page.fill('#schat', at);
    await page.fill('#schtz', 'Europe/Amsterdam');
    await page.fill('#schprompt', `Restock reminder. ${XSS}`);
    // The previous schedule's "Scheduled sch_…" is still shown until this one's answer replaces it.
    const before = (await page.textContent('#schmsg')) ?? '';
    await page.click('#schadd');
    const msg = await page.waitForFunction((prev) => {
      const doc = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document;
      const t = doc.querySelector('#schmsg')?.textContent ?? '';
      return t.startsWith('Scheduled sch_') && t !== prev ? t : null;
    }, before);
    return String(await msg.jsonValue()).replace('Scheduled ', '');
  };

  it('schedules from the page, shows delivered, then an undelivered run stands out', async () => {
    expect((await hook.send(gw.url!, { text: 'hi', conversation: 'store-7', sender: 'crm' })).status).toBe(202);
    await eventually(async () => hook.received.length === 1);
    page = await browser.newPage();
    await page.goto(`${gw.url}/console`);
    await page.fill('#key', TEST_OPERATOR_KEY);
    await page.click('#go');
    await page.waitForSelector('#app:not([hidden])');
    // #app shows before its panels have loaded: wait for the schedules table's own answer.
    await page.waitForSelector('#schedules :text("no schedules")', { timeout: 20_000 });

    const ok = await schedule(new Date().toISOString());
    await page.waitForSelector(`#schedules tr[data-schedule="${ok}"][data-status="delivered"]`, { timeout: 45_000 });
    expect(hook.received.map((r) => r.text)).toContain('Restock the shelves today.');
    expect(await page.textContent(`#schedules tr[data-schedule="${ok}"]`)).toContain('webhook/shop/store-7/-');
    expect(await page.textContent(`#schedules tr[data-schedule="${ok}"]`)).toContain(XSS);
    expect(await page.locator('#schedules img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();

    // The shop's callback is down: the reply is retried, dead-lettered, and the run reads undelivered.
    hook.status = 500;
    const lost = await schedule(new Date().toISOString());
    const row = await page.waitForSelector(`#schedules tr[data-schedule="${lost}"][data-status="undelivered"]`, { timeout: 45_000 });
    expect(await row.$eval('td.bad', (td) => td.textContent)).toMatch(/^undelivered/);
    // The turn's own delivery, then the delivery queue's 2 attempts, each 2 callback tries: all really reached the callback.
    expect(hook.failed.length).toBe(6);
    expect(hook.received.filter((r) => r.text === 'Restock the shelves today.')).toHaveLength(1);

    await page.click(`button[data-delete-schedule="${lost}"]`);
    await page.waitForSelector(`#schedules tr[data-schedule="${lost}"]`, { state: 'detached' });
    expect(await gw.infra.store.db.query('select 1 from schedules where id = $1', [lost]).then((r) => r.rows.length)).toBe(0);
  }, 150_000);
});
