/**
 * Images in from Telegram: a photo (its largest size within the limit) or an image document, by
 * getFile and the Bot API's file endpoint (/file/bot<token>/<path>: the fake answers 404 to any
 * other token, as Telegram does), reaches a model that takes images as an image part; a disguised
 * or oversized file, or a model without image input, gets a note instead.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeRequest, lastUserText } from './fakes/fake-llm.js';
import { ALICE, DM_ALICE, startTelegramWorld, type TelegramWorld } from './fakes/telegram-world.js';
import { allText, BIG_PNG, imageParts, PNG, PNG_URL } from './support/images.js';

let vision: TelegramWorld;
let plain: TelegramWorld;

beforeAll(async () => {
  vision = await startTelegramWorld({}, { input: ['text', 'image'], attachments: { maxImageBytes: 4096 } });
  plain = await startTelegramWorld({}, { attachments: { maxImageBytes: 4096 } });
}, 240_000);
afterAll(async () => {
  await vision?.close();
  await plain?.close();
});

const send = async (
  w: TelegramWorld,
  m: { text: string; photo?: Buffer; document?: { name: string; mimeType: string; bytes: Buffer } },
): Promise<FakeRequest> => {
  const { updateId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, ...m });
  await w.answered(updateId, 30_000);
  return w.llm.requests.find((r) => lastUserText(r.body).startsWith(m.text))!;
};

describe('images in from telegram', () => {
  it('a photo reaches the model as an image part, fetched by getFile and the file endpoint', async () => {
    const req = await send(vision, { text: 'what is this photo', photo: PNG });
    expect(imageParts(req)).toEqual([PNG_URL]);
    expect(vision.fake.callsOf('getFile')).toHaveLength(1);
    expect(vision.fake.fileDownloads).toHaveLength(1);
  });

  it('an image sent as a document reaches the model too, typed by its bytes', async () => {
    const req = await send(vision, { text: 'a document picture', document: { name: 'scan.png', mimeType: 'image/png', bytes: PNG } });
    expect(imageParts(req)).toEqual([PNG_URL]);
  });

  it('a non-image file labelled image/png is refused with a note', async () => {
    const req = await send(vision, {
      text: 'disguised doc',
      document: { name: 'evil.png', mimeType: 'image/png', bytes: Buffer.from('%PDF-1.7 not an image') },
    });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('[attachment evil.png (image/png): not shown: the file is not a PNG, JPEG, GIF or WebP image]');
  });

  it('an image over attachments.maxImageBytes gets a note, without a download', async () => {
    const before = vision.fake.fileDownloads.length;
    const req = await send(vision, { text: 'too big doc', document: { name: 'big.png', mimeType: 'image/png', bytes: BIG_PNG } });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('big.png (image/png): image not shown: larger than the 4096-byte limit');
    expect(vision.fake.fileDownloads.length).toBe(before);
  });

  it('a model without image input gets a note instead of the image', async () => {
    const req = await send(plain, { text: 'text only photo', photo: PNG });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('image omitted: model does not support images');
  });
});
