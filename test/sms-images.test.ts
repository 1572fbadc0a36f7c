/**
 * Images in by MMS (Twilio): MediaUrl0..N are fetched with the account's Basic credentials (the
 * fake's Media resource answers 401 without them, then redirects to the file, as Twilio does with
 * HTTP Basic auth for media on), and an image reaches a model that takes images as an image part;
 * a disguised or oversized file, or a model without image input, gets a note instead.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';
import { allText, BIG_PNG, imageParts, PNG, PNG_URL } from './support/images.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550100000';
const ALICE = '+15550100001';

interface Side {
  tw: FakeTwilio;
  gw: Gateway;
}

describe('images in by MMS (Twilio)', () => {
  let llm: FakeLlm;
  let vision: Side;
  let plain: Side;

  const side = async (input?: string[]): Promise<Side> => {
    const tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      llm,
      {},
      {
        ...(input ? { provider: { input } } : {}),
        attachments: { maxImageBytes: 4096 },
        channels: { sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_TEST_TWILIO_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url, waitForSentMs: 0 } },
        access: { sms: { policy: 'open' } },
      },
    );
    const gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TEST_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
    return { tw, gw };
  };

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`seen: ${lastUserText(req.body).split('\n')[0]}`));
    vision = await side(['text', 'image']);
    plain = await side();
  }, 180_000);
  afterAll(async () => {
    for (const s of [vision, plain]) {
      await s?.gw.close();
      await s?.tw.close();
    }
    await llm?.close();
  });

  const send = async (s: Side, body: string, media: Array<{ url: string; contentType: string }>): Promise<FakeRequest> => {
    expect((await s.tw.webhook(INBOUND, s.tw.inboundParams({ from: ALICE, to: TWILIO_NUMBER, body, media }))).status).toBe(200);
    await eventually(async () => s.tw.sentTo(ALICE).some((m) => m.body.startsWith(`seen: ${body}`)), 20_000);
    return llm.requests.find((r) => lastUserText(r.body).startsWith(body))!;
  };

  it('an MMS image reaches the model as an image part, fetched with the account credentials', async () => {
    const req = await send(vision, 'what is this', [vision.tw.addMedia('image/png', PNG)]);
    expect(imageParts(req)).toEqual([PNG_URL]);
    expect(vision.tw.mediaFetches).toEqual([expect.objectContaining({ authorized: true })]);
  });

  it('a non-image file labelled image/png is refused with a note', async () => {
    const req = await send(vision, 'disguised', [vision.tw.addMedia('image/png', Buffer.from('BEGIN:VCARD\nFN:Mallory\nEND:VCARD'))]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('[attachment media-0 (image/png): not shown: the file is not a PNG, JPEG, GIF or WebP image]');
  });

  it('an image over attachments.maxImageBytes gets a note', async () => {
    const req = await send(vision, 'too big', [vision.tw.addMedia('image/png', BIG_PNG)]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('media-0 (image/png): image not shown: larger than the 4096-byte limit');
  });

  it('a model without image input gets a note instead of the image', async () => {
    const req = await send(plain, 'text only', [plain.tw.addMedia('image/png', PNG)]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('image omitted: model does not support images');
  });
});
