/**
 * Images in from Slack: a file of a message event, downloaded from url_private with the bot token
 * (the fake answers its sign-in page without it, as Slack does), reaches a model that takes images
 * as an image part; its type is what its bytes say; a disguised or oversized file, or a model
 * without image input, gets a note instead; a later turn names the image instead of resending it.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { eventually, readyz, startGateway, testConfig } from './support/gateway.js';
import { allText, BIG_PNG, imageParts, PNG, PNG_URL } from './support/images.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_APP = APP_TOKEN;

describe('images in from Slack', () => {
  let llm: FakeLlm;
  let vision: FakeSlack;
  let plain: FakeSlack;
  let gwVision: Gateway;
  let gwPlain: Gateway;

  const config = (slack: FakeSlack, input?: string[]) =>
    testConfig(
      llm,
      {},
      {
        ...(input ? { provider: { input } } : {}),
        attachments: { maxImageBytes: 4096 },
        channels: {
          slack: { mode: 'socket', apiUrl: slack.apiUrl, botTokenEnv: 'SB_TEST_SLACK_BOT', appTokenEnv: 'SB_TEST_SLACK_APP', streamIntervalMs: 100 },
        },
        access: { slack: { policy: 'open' } },
      },
    );

  beforeAll(async () => {
    llm = new FakeLlm();
    vision = new FakeSlack({ pingMs: 300 });
    plain = new FakeSlack({ pingMs: 300 });
    await Promise.all([llm.start(), vision.start(), plain.start()]);
    llm.respond((req) => reply(`seen: ${lastUserText(req.body).split('\n')[0]}`));
    for (const s of [vision, plain]) s.users.set('UALICE', { id: 'UALICE', name: 'alice' });
    gwVision = await startGateway(config(vision, ['text', 'image']));
    gwPlain = await startGateway(config(plain));
    for (const gw of [gwVision, gwPlain])
      await eventually(
        async () => ((await (await readyz(gw.url!)).json()) as { checks: Record<string, { ok: boolean }> }).checks['channel:slack']?.ok === true,
        15_000,
      );
  }, 180_000);
  afterAll(async () => {
    await gwVision?.close();
    await gwPlain?.close();
    await Promise.all([llm?.close(), vision?.close(), plain?.close()]);
  });

  const send = async (slack: FakeSlack, channel: string, text: string, files?: unknown[]) => {
    const ev = slack.userMessage({ user: 'UALICE', channel, text, ...(files ? { files } : {}) });
    await slack.sendEnvelope('events_api', slack.eventBody(ev));
    await eventually(async () => slack.botMessages(channel).find((m) => !m.streaming && m.text.includes(`seen: ${text}`)), 20_000);
    return llm.requests.find((r) => lastUserText(r.body).startsWith(text))!;
  };
  const sent = (text: string): FakeRequest => llm.requests.find((r) => lastUserText(r.body).startsWith(text))!;

  it('an image file reaches the model as an image part, fetched with the bot token; the next turn names it', async () => {
    const req = await send(vision, 'D1', 'what is this', [vision.uploadFile('cat.png', 'image/png', PNG)]);
    expect(imageParts(req)).toEqual([PNG_URL]);
    expect(vision.fileDownloads.at(-1)!.authorization).toBe(`Bearer ${BOT_TOKEN}`);
    await send(vision, 'D1', 'and now');
    const later = sent('and now');
    expect(imageParts(later)).toEqual([]);
    expect(allText(later)).toMatch(/\[image 1 \(image\/png, 1 KB\) was shown with this message\]/);
  });

  it('a non-image file labelled image/png is refused with a note', async () => {
    const req = await send(vision, 'D2', 'disguised', [vision.uploadFile('evil.png', 'image/png', Buffer.from('<svg onload=alert(1)>'))]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('[attachment evil.png (image/png): not shown: the file is not a PNG, JPEG, GIF or WebP image]');
  });

  it('an image over attachments.maxImageBytes gets a note', async () => {
    const req = await send(vision, 'D3', 'too big', [vision.uploadFile('big.png', 'image/png', BIG_PNG)]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('big.png (image/png): image not shown: larger than the 4096-byte limit');
  });

  it("an image at an address that is not Slack's goes through the SSRF guard, without the token", async () => {
    const before = vision.fileDownloads.length;
    const file = { id: 'FMETA', name: 'meta.png', mimetype: 'image/png', size: 10, url_private: 'http://169.254.169.254/latest/meta-data/meta.png' };
    const req = await send(vision, 'D5', 'metadata please', [file]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toMatch(/\[attachment meta\.png \(image\/png\): image not shown: it could not be downloaded \(SSRF guard refused URL/);
    expect(vision.fileDownloads.length).toBe(before);
  });

  it('a model without image input gets a note instead of the image', async () => {
    const req = await send(plain, 'D4', 'text only', [plain.uploadFile('cat.png', 'image/png', PNG)]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('image omitted: model does not support images');
  });
});
