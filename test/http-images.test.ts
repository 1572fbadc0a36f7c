/**
 * Images in through the HTTP APIs (Responses input_image, chat completions image_url): a data URL,
 * checked by its magic bytes and size, reaches a model whose input includes "image" as an image
 * part (what the fake LLM receives); a text-only model gets a note instead; a later turn names the
 * image instead of sending it again. Every hostile image is refused before anything is enqueued.
 */

import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

type Part = { type: string; text?: string; image_url?: { url: string } };
type Msg = { role: string; content: string | Part[] };

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1').toString('base64');
const dataUrl = (b64: string, type = 'image/png') => `data:${type};base64,${b64}`;

const imageParts = (req: FakeRequest): string[] =>
  (req.body.messages as Msg[]).flatMap((m) => (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : []));
const allText = (req: FakeRequest): string =>
  (req.body.messages as Msg[]).map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join(' '))).join('\n');

describe('images in through the HTTP APIs', () => {
  let fake: FakeLlm;
  let vision: Gateway; // its model takes images
  let textOnly: Gateway;
  let redis: TestRedis;
  let db1: TestDatabase;
  let db2: TestDatabase;
  let client: OpenAI;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`seen: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    db1 = await createTestDatabase();
    db2 = await createTestDatabase();
    vision = await startGateway(
      testConfig(fake, { redisUrl: redis.url, databaseUrl: db1.url }, { provider: { input: ['text', 'image'] }, http: { maxBodyBytes: 8 * 1024 * 1024 } }),
    );
    // Its provider also takes no JSON modes: a Responses text.format JSON is refused there.
    textOnly = await startGateway(testConfig(fake, { redisUrl: redis.url, databaseUrl: db2.url }, { provider: { jsonModes: false } }));
    client = openaiClient(vision.url!);
  }, 180_000);
  afterAll(async () => {
    await textOnly?.close();
    await vision?.close();
    await fake?.close();
    await redis?.stop();
    await db1?.drop();
    await db2?.drop();
  });

  const sent = (text: string): FakeRequest[] => fake.requests.filter((r) => lastUserText(r.body) === text);
  const post = (path: string, body: unknown, url = vision.url!) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const responsesImage = (text: string, image_url: string) => ({
    model: 'default',
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text },
          { type: 'input_image', image_url, detail: 'auto' },
        ],
      },
    ],
  });

  it('a Responses input_image reaches the model as an image part; the next turn names it instead of resending it', async () => {
    const r1 = await client.responses.create(responsesImage('what is in this picture', dataUrl(PNG)) as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(r1.output_text).toBe('seen: what is in this picture');
    const [call] = sent('what is in this picture');
    expect(imageParts(call!)).toEqual([dataUrl(PNG)]);

    const r2 = await client.responses.create({ model: 'default', input: 'and now?', previous_response_id: r1.id });
    expect(r2.output_text).toBe('seen: and now?');
    const [later] = sent('and now?');
    expect(imageParts(later!)).toEqual([]);
    expect(allText(later!)).toMatch(/\[image 1 \(image\/png, 1 KB\) was shown with this message\]/);
  });

  it('a chat-completions image_url part reaches the model as an image part too', async () => {
    const r = await client.chat.completions.create({
      model: 'default',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'chat picture' },
            { type: 'image_url', image_url: { url: dataUrl(PNG) } },
          ],
        },
      ],
    });
    expect(r.choices[0]!.message.content).toBe('seen: chat picture');
    expect(imageParts(sent('chat picture')[0]!)).toEqual([dataUrl(PNG)]);
  });

  it('the type is what the bytes say, not the label', async () => {
    const r = await post('/v1/responses', responsesImage('labelled png, really gif', dataUrl(GIF, 'image/png')));
    expect(r.status).toBe(200);
    expect(imageParts(sent('labelled png, really gif')[0]!)).toEqual([dataUrl(GIF, 'image/gif')]);
  });

  it('a model without image input gets a note instead of the image', async () => {
    const r = await post('/v1/responses', responsesImage('text-only model picture', dataUrl(PNG)), textOnly.url!);
    expect(r.status).toBe(200);
    const call = fake.requests.find((q) => allText(q).includes('text-only model picture'));
    expect(imageParts(call!)).toEqual([]);
    expect(allText(call!)).toContain('image omitted: model does not support images');
  });

  it('a gateway whose provider takes no JSON modes refuses text.format JSON by name', async () => {
    const r = await post('/v1/responses', { model: 'default', input: 'json please', text: { format: { type: 'json_object' } } }, textOnly.url!);
    expect(r.status).toBe(400);
    const e = ((await r.json()) as { error: { param: string; code: string; message: string } }).error;
    expect(e).toMatchObject({ param: 'text.format', code: 'unsupported_parameter' });
    expect(e.message).toMatch(/takes no JSON modes/);
    expect(sent('json please')).toHaveLength(0);
  });

  describe('hostile images are refused with a 400 and nothing is enqueued', () => {
    const big = Buffer.alloc(4 * 1024 * 1024 + 1);
    Buffer.from(PNG, 'base64').copy(big);
    const cases: Array<[string, unknown, string, string]> = [
      ['a remote URL (never fetched)', 'http://169.254.169.254/latest/meta-data/x.png', 'unsupported_image_url', 'input[0].content[1].image_url'],
      ['not base64', 'data:image/png;base64,%%%not-base64%%%', 'invalid_image', 'input[0].content[1].image_url'],
      ['text bytes labelled image/png', dataUrl(Buffer.from('<svg onload=alert(1)>').toString('base64')), 'invalid_image', 'input[0].content[1].image_url'],
      [
        'an SVG',
        dataUrl(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64'), 'image/svg+xml'),
        'invalid_image',
        'input[0].content[1].image_url',
      ],
      ['not a data URL', 'file:///etc/passwd', 'invalid_image', 'input[0].content[1].image_url'],
      ['not a string', { url: 42 }, 'invalid_type', 'input[0].content[1].image_url'],
      ['over 4 MB', dataUrl(big.toString('base64')), 'image_too_large', 'input[0].content[1].image_url'],
    ];
    it.each(cases)('%s', async (_name, url, code, param) => {
      const before = fake.requests.length;
      const r = await post('/v1/responses', responsesImage('hostile', url as string));
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: unknown }).error).toMatchObject({ code, param });
      expect(fake.requests.length).toBe(before);
    });

    it('more than 8 images, and an image in an earlier one-off message', async () => {
      const many = Array.from({ length: 9 }, () => ({ type: 'input_image', image_url: dataUrl(PNG) }));
      const r = await post('/v1/responses', { model: 'default', input: [{ role: 'user', content: [{ type: 'input_text', text: 'many' }, ...many] }] });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('too_many_images');
      const c = await post('/v1/chat/completions', {
        model: 'default',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(PNG) } }] },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'and?' },
        ],
      });
      expect(c.status).toBe(400);
      expect(((await c.json()) as { error: { code: string } }).error.code).toBe('unsupported_content');
      const audio = await post('/v1/chat/completions', {
        model: 'default',
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }],
      });
      expect(audio.status).toBe(400);
      expect(((await audio.json()) as { error: { code: string } }).error.code).toBe('unsupported_content');
      expect(sent('many')).toHaveLength(0);
      expect(sent('and?')).toHaveLength(0);
    });
  });
});
