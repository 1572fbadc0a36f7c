/**
 * The post-and-edit engine against an in-memory platform (a fake of a chat
 * API that posts, edits and deletes messages): throttled edits, prefix-stable
 * and fence-aware splitting, and a retried attempt resuming the messages the
 * first one posted (from the deliveries store).
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryRecord, DeliveryStore } from '../adapters/store/deliveries.js';
import { deliveriesRecord, type EditPlatform, type Part, PostAndEdit } from '../src/channel/post-and-edit.js';

const log = pino({ level: 'silent' });

/** A chat platform's messages, with every post and edit logged. */
class FakeChat implements EditPlatform {
  messages = new Map<string, { content: string; extra: unknown; deleted: boolean }>();
  log: Array<{ op: 'post' | 'edit' | 'delete'; id: string; content?: string; at: number }> = [];
  resumed: string[] = [];
  private n = 0;
  async post(part: Part) {
    const id = `m${++this.n}`;
    this.messages.set(id, { content: part.content, extra: part.extra, deleted: false });
    this.log.push({ op: 'post', id, content: part.content, at: Date.now() });
    return { id };
  }
  async edit(id: string, part: Part) {
    const m = this.messages.get(id);
    if (!m || m.deleted) return 'gone' as const;
    m.content = part.content;
    m.extra = part.extra;
    this.log.push({ op: 'edit', id, content: part.content, at: Date.now() });
    return 'ok' as const;
  }
  async remove(id: string) {
    this.messages.get(id)!.deleted = true;
    this.log.push({ op: 'delete', id, at: Date.now() });
  }
  permanent() {
    return false;
  }
  async resumedAfterPark(id: string) {
    this.resumed.push(id);
  }
  shown(): string[] {
    return [...this.messages.values()].filter((m) => !m.deleted).map((m) => m.content);
  }
}

class MemoryDeliveries {
  rows: DeliveryRecord[] = [];
  async get(turnId: string, channel: string, target: string) {
    return this.rows.find((r) => r.turnId === turnId && r.channel === channel && r.target === target);
  }
  async record(turnId: string, channel: string, target: string, f: { platformMessageId?: string | null; state: string; body?: string | null }) {
    let r = await this.get(turnId, channel, target);
    if (!r)
      this.rows.push(
        (r = { id: this.rows.length + 1, turnId: turnId, channel, target, platformMessageId: null, state: f.state, body: null, updatedAt: new Date() }),
      );
    r.platformMessageId = f.platformMessageId ?? r.platformMessageId;
    r.state = f.state;
    r.body = f.body ?? r.body;
    return r;
  }
}

const opts = (extra: Partial<ConstructorParameters<typeof PostAndEdit>[2]> = {}) => ({
  maxChars: 2000,
  editIntervalMs: 1000,
  deliveryTimeoutMs: 5000,
  log,
  ...extra,
});
const fenceCount = (s: string) => (s.match(/^```/gm) ?? []).length;

describe('post-and-edit engine', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('posts at once, then edits at most once per interval, coalescing what came in between', async () => {
    const chat = new FakeChat();
    const e = new PostAndEdit(chat, null, opts(), false);
    e.show({ text: 'Hel' });
    await vi.advanceTimersByTimeAsync(10);
    expect(chat.log.map((l) => [l.op, l.content])).toEqual([['post', 'Hel']]);
    for (const t of ['Hello', 'Hello, w', 'Hello, wor', 'Hello, world']) {
      e.show({ text: t });
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(chat.log).toHaveLength(1); // nothing before the interval is up
    await vi.advanceTimersByTimeAsync(700);
    expect(chat.log.map((l) => [l.op, l.content])).toEqual([
      ['post', 'Hel'],
      ['edit', 'Hello, world'],
    ]);
    e.show({ text: 'Hello, world!' });
    const closing = e.close();
    await vi.advanceTimersByTimeAsync(1000);
    await closing;
    expect(chat.log.map((l) => l.op)).toEqual(['post', 'edit', 'edit']);
    expect(chat.log[2]!.at - chat.log[1]!.at).toBeGreaterThanOrEqual(1000);
    expect(chat.shown()).toEqual(['Hello, world!']);
  });

  it('a status line shows under the text while the turn runs, and goes at the end', async () => {
    const chat = new FakeChat();
    const e = new PostAndEdit(chat, null, opts({ editIntervalMs: 10 }), false);
    e.show({ text: '', status: 'Running shell_exec…' });
    await vi.advanceTimersByTimeAsync(20);
    expect(chat.shown()).toEqual(['Running shell_exec…']);
    e.show({ text: 'Done.', status: null });
    const closing = e.close();
    await vi.advanceTimersByTimeAsync(50);
    await closing;
    expect(chat.shown()).toEqual(['Done.']);
  });

  it('splits prefix-stable: a message is never changed once the next one is posted', async () => {
    const chat = new FakeChat();
    const e = new PostAndEdit(chat, null, opts({ maxChars: 120, editIntervalMs: 50 }), false);
    const words = Array.from({ length: 150 }, (_, i) => `word${i}`);
    let text = '';
    for (const [i, w] of words.entries()) {
      text += (i ? (i % 9 === 0 ? '\n' : ' ') : '') + w;
      e.show({ text });
      await vi.advanceTimersByTimeAsync(7);
    }
    const closing = e.close();
    await vi.advanceTimersByTimeAsync(500);
    await closing;
    const shown = chat.shown();
    expect(shown.length).toBeGreaterThan(5);
    expect(shown.every((m) => m.length <= 120)).toBe(true);
    expect(shown.join('\n').split(/\s+/)).toEqual(words);
    const posts = chat.log.filter((l) => l.op === 'post').map((l) => l.id);
    for (let i = 0; i < posts.length - 1; i++) {
      const nextPostedAt = chat.log.findIndex((l) => l.op === 'post' && l.id === posts[i + 1]);
      const laterEdits = chat.log.slice(nextPostedAt).filter((l) => l.op === 'edit' && l.id === posts[i]);
      expect(laterEdits).toEqual([]);
    }
  });

  it('never splits inside a code fence: closes it and reopens it with its language', async () => {
    const chat = new FakeChat();
    const e = new PostAndEdit(chat, null, opts({ maxChars: 200, editIntervalMs: 10 }), false);
    const code = Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join('\n');
    e.show({ text: `Here:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat is all.` });
    const closing = e.close();
    await vi.advanceTimersByTimeAsync(200);
    await closing;
    const shown = chat.shown();
    expect(shown.length).toBeGreaterThan(2);
    for (const m of shown) {
      expect(m.length).toBeLessThanOrEqual(200);
      expect(fenceCount(m) % 2).toBe(0);
    }
    expect(shown[1]!.startsWith('```ts\n')).toBe(true);
    expect(shown[0]!.endsWith('\n```')).toBe(true);
    expect(shown.at(-1)!.endsWith('That is all.')).toBe(true);
  });

  it('a retried attempt edits the messages the first one posted (from the deliveries store)', async () => {
    const chat = new FakeChat();
    const store = new MemoryDeliveries();
    const record = () => deliveriesRecord(store as unknown as DeliveryStore, 't1', 'fake', 'chan', log);
    const first = new PostAndEdit(chat, record(), opts({ maxChars: 50 }), false);
    first.show({ text: 'the first attempt got this far before its worker died, mid-sentence' });
    await vi.advanceTimersByTimeAsync(20);
    expect(chat.shown()).toHaveLength(2);
    expect(store.rows[0]).toMatchObject({ state: 'streaming', platformMessageId: 'm1' });
    // The worker dies: never closed. The retry answers shorter, in one message.
    const second = new PostAndEdit(chat, record(), opts({ maxChars: 50 }), true);
    second.show({ text: 'the second attempt, in full' });
    const closing = second.close();
    await vi.advanceTimersByTimeAsync(2000);
    await closing;
    expect(chat.log.filter((l) => l.op === 'post')).toHaveLength(2); // nothing posted again
    expect(chat.shown()).toEqual(['the second attempt, in full']); // the message left over is deleted
    expect(store.rows[0]).toMatchObject({ state: 'delivered', body: JSON.stringify({ phase: 0, ids: ['m1'] }) });
  });

  it('a turn resumed after it parked starts a new reply under the request', async () => {
    const chat = new FakeChat();
    const store = new MemoryDeliveries();
    const record = () => deliveriesRecord(store as unknown as DeliveryStore, 't2', 'fake', 'chan', log);
    const asking = new PostAndEdit(chat, record(), opts(), false);
    asking.show({ text: 'I need to run a command.', extra: [{ buttons: ['approve K7Q4P'] }] });
    let closing = asking.close(true);
    await vi.advanceTimersByTimeAsync(20);
    await closing;
    expect(store.rows[0]!.state).toBe('parked');
    const resumed = new PostAndEdit(chat, record(), opts(), true);
    resumed.show({ text: 'It ran: exit code 0.' });
    closing = resumed.close();
    await vi.advanceTimersByTimeAsync(20);
    await closing;
    expect(chat.resumed).toEqual(['m1']);
    expect(chat.shown()).toEqual(['I need to run a command.', 'It ran: exit code 0.']);
    expect(JSON.parse(store.rows[0]!.body!)).toEqual({ phase: 1, ids: ['m2'] });
  });
  it('asks the fence right before each call: an edit queued while the lease held is not sent once it is lost', async () => {
    const chat = new FakeChat();
    let held = true;
    const e = new PostAndEdit(chat, null, opts({ fence: () => held }), false);
    e.show({ text: 'alpha0' });
    await vi.advanceTimersByTimeAsync(10);
    e.show({ text: 'alpha0 alpha1' }); // queued behind the throttle
    await vi.advanceTimersByTimeAsync(100);
    held = false; // frozen past the lease; another attempt took the turn
    await vi.advanceTimersByTimeAsync(2_000);
    const closing = e.close().catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(10);
    expect(await closing).toMatchObject({ code: 'lease_lost' });
    expect(chat.log.map((l) => [l.op, l.content])).toEqual([['post', 'alpha0']]);
  });
});
