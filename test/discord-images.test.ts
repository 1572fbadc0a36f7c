/**
 * Images in from Discord: a message attachment, downloaded from its signed CDN URL (the fake's CDN
 * answers 404 to a URL whose signature is missing or wrong, as Discord's does), reaches a model
 * that takes images as an image part; a disguised or oversized file, or a model without image
 * input, gets a note instead.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, DM, startWorld, type World } from './fakes/discord-world.js';
import { type FakeRequest, lastUserText } from './fakes/fake-llm.js';
import { allText, BIG_PNG, imageParts, PNG, PNG_URL } from './support/images.js';

let vision: World;
let plain: World;

beforeAll(async () => {
  vision = await startWorld({}, { input: ['text', 'image'], attachments: { maxImageBytes: 4096 } });
  plain = await startWorld({}, { attachments: { maxImageBytes: 4096 } });
}, 240_000);
afterAll(async () => {
  await vision?.close();
  await plain?.close();
});

const send = async (w: World, content: string, file: { filename: string; content_type: string; bytes: Buffer }): Promise<FakeRequest> => {
  const id = w.fake.userMessage({ channelId: DM, author: ALICE, content, attachments: [{ ...file, size: file.bytes.length }] });
  await w.answered(id, 30_000);
  return w.primary.requests.find((r) => lastUserText(r.body).startsWith(content))!;
};

describe('images in from discord', () => {
  it('an image attachment reaches the model as an image part, fetched from its signed CDN URL', async () => {
    const req = await send(vision, 'what is this', { filename: 'cat.png', content_type: 'image/png', bytes: PNG });
    expect(imageParts(req)).toEqual([PNG_URL]);
    expect(vision.fake.cdnDownloads).toEqual([expect.objectContaining({ signed: true })]);
  });

  it('a non-image file labelled image/png is refused with a note', async () => {
    const req = await send(vision, 'disguised', { filename: 'evil.png', content_type: 'image/png', bytes: Buffer.from('MZ\x90\x00 an executable') });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('[attachment evil.png (image/png): not shown: the file is not a PNG, JPEG, GIF or WebP image]');
  });

  it('an image over attachments.maxImageBytes gets a note, without a download', async () => {
    const before = vision.fake.cdnDownloads.length;
    const req = await send(vision, 'too big', { filename: 'big.png', content_type: 'image/png', bytes: BIG_PNG });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('big.png (image/png): image not shown: larger than the 4096-byte limit');
    expect(vision.fake.cdnDownloads.length).toBe(before);
  });

  it('a model without image input gets a note instead of the image', async () => {
    const req = await send(plain, 'text only', { filename: 'cat.png', content_type: 'image/png', bytes: PNG });
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('image omitted: model does not support images');
  });
});
