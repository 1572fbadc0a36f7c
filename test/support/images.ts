import type { FakeRequest } from '../fakes/fake-llm.js';

/** Image fixtures and what the fake LLM received (OpenAI chat-completions shape), for the images-in tests. */

type Part = { type: string; text?: string; image_url?: { url: string } };
type Msg = { role: string; content: string | Part[] | null };

/** A 1×1 PNG. */
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
export const PNG_URL = `data:image/png;base64,${PNG.toString('base64')}`;
/** A PNG header followed by 8 KB: over a 4096-byte limit. */
export const BIG_PNG = Buffer.concat([PNG, Buffer.alloc(8192)]);

export const imageParts = (req: FakeRequest): string[] =>
  (req.body.messages as Msg[]).flatMap((m) => (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : []));
export const allText = (req: FakeRequest): string =>
  (req.body.messages as Msg[]).map((m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join(' '))).join('\n');
