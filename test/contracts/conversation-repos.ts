/**
 * Contracts of the conversation repositories (adapters/store/ports/): what
 * every implementation guarantees, asserted on each of them by
 * test/ports.contract.test.ts. Each test works in conversations of its own.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../adapters/store/ports/transcript.js';
import type { StartTurn } from '../../adapters/store/ports/turns.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import type { AllRepositories } from '../support/memory-repos/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const u = () => randomUUID().slice(0, 8);

export function msg(externalId: string, key: string, text = 'hello', extra: Partial<InboundMessage> = {}): InboundMessage {
  return { channel: 'http', externalId, conversationKey: key, sender: { id: 'u1' }, text, attachments: [], receivedAt: new Date(), ...extra };
}

export function starter(repos: () => AllRepositories) {
  return (conversationId: string, extra: Partial<StartTurn> = {}) =>
    repos().turns.startTurn({
      conversationId,
      worker: 'w1',
      lease: 'lease-1',
      leaseMs: 30_000,
      claim: 'auto',
      modes: { default: 'followup', byChannel: {} },
      historyLimits: { default: 50 },
      memoryLimit: 5,
      ...extra,
    });
}

/** A closed turn with these messages in a new conversation; returns its ids. */
export async function closedTurn<M extends StoredMessage>(repos: () => AllRepositories, key: string, messages: M[], m: Partial<InboundMessage> = {}) {
  const a = await repos().inbox.accept(msg(`${key}-${u()}`, key, 'hi', m));
  const t = (await starter(repos)(a.conversationId)).turn!;
  await repos().turns.finishTurn({ turnId: t.id, status: 'done', messages, finishReason: 'stop', lease: 'lease-1' });
  return { conversationId: a.conversationId, turnId: t.id, inboxId: a.inboxId };
}

export function conversationRepositoryContracts(repos: () => AllRepositories): void {
  const start = starter(repos);

  describe('inbox', () => {
    it('accepts a message once per (channel, external id), in the conversation of its key', async () => {
      const key = `http/-/inbox-${u()}/-`;
      const ext = `dup-${u()}`;
      const a = await repos().inbox.accept(msg(ext, key));
      const b = await repos().inbox.accept(msg(ext, key, 'redelivered'));
      expect(a.duplicate).toBe(false);
      expect(b).toEqual({ conversationId: a.conversationId, inboxId: a.inboxId, duplicate: true });
      expect(await repos().inbox.inboxByExternalId('http', ext)).toEqual(b);
      expect(await repos().inbox.inboxByExternalId('http', `none-${u()}`)).toBeUndefined();
      const other = await repos().inbox.accept({ ...msg(ext, key), channel: 'sms' });
      expect(other).toMatchObject({ conversationId: a.conversationId, duplicate: false });
      const row = await repos().inbox.inboxRow(a.inboxId);
      expect(row).toMatchObject({
        id: a.inboxId,
        conversationId: a.conversationId,
        channel: 'http',
        externalId: ext,
        text: 'hello',
        sender: { id: 'u1' },
        senderIdentity: 'http:u1',
        turnId: null,
        consumedAt: null,
        replyTo: null,
        context: null,
      });
      expect(row!.receivedAt).toBeInstanceOf(Date);
      expect((await repos().inbox.pending(a.conversationId)).map((r) => r.id)).toEqual([a.inboxId, other.inboxId]);
      expect((await repos().conversations.conversationByKey(key))!.agent).toBe('default');
    });

    it('claims the unclaimed rows into a turn, once; finds rows left unconsumed too long', async () => {
      const key = `http/-/claim-${u()}/-`;
      const a = await repos().inbox.accept(msg(`c1-${u()}`, key, 'one'));
      const t = (await start(a.conversationId)).turn!;
      const b = await repos().inbox.accept(msg(`c2-${u()}`, key, 'two'));
      const c = await repos().inbox.accept(msg(`c3-${u()}`, key, 'three'));
      const claimed = await repos().inbox.claimInto(t.id, a.conversationId);
      expect(claimed.map((r) => [r.id, r.turnId])).toEqual([
        [b.inboxId, t.id],
        [c.inboxId, t.id],
      ]);
      expect(await repos().inbox.claimInto('t_other', a.conversationId)).toEqual([]);
      await sleep(60);
      expect(await repos().inbox.stuckConversations(50)).toContain(a.conversationId);
      expect(await repos().inbox.stuckConversations(60_000)).not.toContain(a.conversationId);
      await repos().turns.finishTurn({ turnId: t.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect(await repos().inbox.pending(a.conversationId)).toEqual([]); // the steered rows were consumed with the turn
      expect(await repos().inbox.stuckConversations(50)).not.toContain(a.conversationId);
    });
  });

  describe('turns', () => {
    it('runs a turn: lease, claim, resume, finish once, transcript in order', async () => {
      const key = `http/-/turns-${u()}/-`;
      const m1 = await repos().inbox.accept(msg(`t-1-${u()}`, key, 'first'));
      const m2 = await repos().inbox.accept(msg(`t-2-${u()}`, key, 'second'));
      const conv = m1.conversationId;
      const begun = await start(conv);
      expect(begun.conversation).toMatchObject({ id: conv, key, channel: 'http' });
      expect(begun.conversation!.createdAt).toBeInstanceOf(Date);
      expect(begun.conversation).not.toHaveProperty('lease_token');
      const turn = begun.turn!;
      expect(turn).toMatchObject({ seq: 1, status: 'running', attempt: 1, worker: 'w1', conversationId: conv });
      expect(turn.startedAt).toBeInstanceOf(Date);
      expect(begun.batch!.map((r) => [r.id, r.text, r.turnId])).toEqual([[m1.inboxId, 'first', turn.id]]); // followup: the oldest only
      expect(begun.context).toMatchObject({ history: [], historyIds: [], summary: null });
      expect(begun.pending.map((r) => [r.id, r.turnId])).toEqual([
        [m1.inboxId, null], // as found, before the claim
        [m2.inboxId, null],
      ]);
      expect(begun.pending[0]!.receivedAt).toBeInstanceOf(Date);
      const other = await start(conv, { lease: 'lease-2', worker: 'w2' });
      expect(other).toMatchObject({ conversation: null, hasWork: true });
      expect(other.turn).toBeUndefined();
      const resumed = await start(conv, { worker: 'w2' });
      expect(resumed.turn).toMatchObject({ id: turn.id, attempt: 2, worker: 'w2' });
      expect(resumed.batch!.map((r) => r.id)).toEqual([m1.inboxId]);
      const messages = [
        { role: 'user', content: 'first', timestamp: 1 },
        { role: 'assistant', content: [{ type: 'text', text: 'reply one' }], timestamp: 2 },
      ];
      const closed = await repos().turns.finishTurn({
        turnId: turn.id,
        status: 'done',
        messages,
        finishReason: 'stop',
        usage: { totalTokens: 7 },
        honesty: [{ claim: 'x' }],
        lease: 'lease-1',
      });
      expect(closed.finished).toBe(true);
      expect(closed.pending.map((r) => r.text)).toEqual(['second']);
      expect(closed.pending[0]!.receivedAt).toBeInstanceOf(Date);
      expect((await repos().turns.finishTurn({ turnId: turn.id, status: 'failed', messages, finishReason: 'error' })).finished).toBe(false);
      expect(await repos().transcript.transcript(conv)).toEqual(messages);
      const done = await repos().turns.turn(turn.id);
      expect(done).toMatchObject({ status: 'done', finishReason: 'stop', usage: { totalTokens: 7 }, honesty: [{ claim: 'x' }], state: null, error: null });
      expect(done!.finishedAt).toBeInstanceOf(Date);
      expect((await repos().inbox.inboxRow(m1.inboxId))!.consumedAt).toBeInstanceOf(Date);
      expect((await start(conv, { lease: 'lease-2' })).conversation).toBeNull(); // something still waited: the lease is held
      const t2 = await start(conv);
      expect(t2.turn!.seq).toBe(2);
      expect(t2.context!.history).toEqual(messages);
      expect(t2.context!.historyIds).toHaveLength(2);
      await repos().turns.finishTurn({ turnId: t2.turn!.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect(await start(conv, { lease: 'lease-2' })).toMatchObject({ conversation: null, hasWork: false, pending: [] });
      await repos().inbox.accept(msg(`t-3-${u()}`, key, 'third'));
      const t3 = await start(conv, { lease: 'lease-2' });
      expect(t3.batch!.map((r) => r.text)).toEqual(['third']);
      await repos().turns.releaseLease(conv, 'lease-1'); // not the holder: nothing changes
      expect((await start(conv, { lease: 'lease-3' })).conversation).toBeNull();
      await repos().turns.releaseLease(conv, 'lease-2');
      expect((await start(conv, { lease: 'lease-3' })).turn).toMatchObject({ id: t3.turn!.id, attempt: 2 });
      expect(await repos().turns.renewLease(conv, 'lease-3', 30_000)).toBe(true);
      expect(await repos().turns.renewLease(conv, 'lease-2', 30_000)).toBe(false);
      expect((await repos().turns.turns(conv)).map((t) => t.seq)).toEqual([1, 2, 3]);
    });

    it('takes an expired lease; claims by queue mode; holds back while a turn is parked', async () => {
      const key = `http/-/modes-${u()}/-`;
      const a = await repos().inbox.accept(msg(`q-1-${u()}`, key, 'a'));
      await repos().inbox.accept(msg(`q-2-${u()}`, key, 'b'));
      const conv = a.conversationId;
      const dead = await start(conv, { lease: 'dead', leaseMs: 1, claim: 'none' });
      expect(dead.conversation).not.toBeNull();
      expect(dead.turn).toBeUndefined();
      await sleep(20);
      const collect = await start(conv, { modes: { default: 'followup', byChannel: { http: 'collect' } } });
      expect(collect).toMatchObject({ mode: 'collect', hasWork: true });
      expect(collect.conversation).not.toBeNull();
      expect(collect.turn).toBeUndefined();
      const all = await start(conv, { claim: 'all' });
      expect(all.batch!.map((r) => r.text)).toEqual(['a', 'b']);
      expect(await repos().turns.parkTurn(all.turn!.id, { parked: true })).toBe(true);
      expect(await repos().turns.parkTurn(all.turn!.id, { again: true })).toBe(false);
      expect(await repos().turns.turn(all.turn!.id)).toMatchObject({ status: 'parked', state: { parked: true } });
      await repos().turns.releaseLease(conv, 'lease-1');
      await repos().inbox.accept(msg(`q-3-${u()}`, key, 'c'));
      expect(await start(conv)).toMatchObject({ conversation: null, hasWork: false });
      expect(await repos().turns.unparkTurn(all.turn!.id)).toBe(conv);
      expect(await repos().turns.unparkTurn(all.turn!.id)).toBeUndefined();
      const back = await start(conv);
      expect(back.turn).toMatchObject({ id: all.turn!.id, attempt: 2 });
      expect(back.batch!.map((r) => r.text)).toEqual(['a', 'b']);
      // The conversation's own queue mode wins over the configuration, when it is a known one.
      await repos().turns.finishTurn({ turnId: back.turn!.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect(await repos().conversations.setQueueMode(key, 'interrupt')).toBe(true);
      await repos().inbox.accept(msg(`q-4-${u()}`, key, 'd'));
      const own = await start(conv, { modes: { default: 'collect', byChannel: { http: 'collect' } } });
      expect(own.mode).toBe('interrupt');
      expect(own.batch!.map((r) => r.text)).toEqual(['c', 'd']); // interrupt claims all
      await repos().turns.finishTurn({ turnId: own.turn!.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      await repos().conversations.setQueueMode(key, 'bogus');
      await repos().inbox.accept(msg(`q-5-${u()}`, key, 'e'));
      expect((await start(conv, { claim: 'none', modes: { default: 'followup', byChannel: { http: 'steer' } } })).mode).toBe('steer');
    });

    it("closes or parks a turn only while the lease is still the drain's (fencing): an overtaken attempt writes nothing", async () => {
      const key = `http/-/fence-${u()}/-`;
      const a = await repos().inbox.accept(msg(`f-1-${u()}`, key, 'a'));
      const conv = a.conversationId;
      const first = (await start(conv, { lease: 'frozen', leaseMs: 1 })).turn!;
      await sleep(20); // the frozen drain's lease expires; another takes the turn over
      const second = await start(conv, { lease: 'fresh' });
      expect(second.turn).toMatchObject({ id: first.id, attempt: 2 });
      const stale = await repos().turns.finishTurn({
        turnId: first.id,
        status: 'done',
        messages: [{ role: 'assistant', content: [] } as never],
        finishReason: 'stop',
        lease: 'frozen',
      });
      expect(stale).toEqual({ finished: false, pending: [] });
      expect(await repos().turns.parkTurn(first.id, { parked: 'by the frozen drain' }, 'frozen')).toBe(false);
      expect(await repos().turns.turn(first.id)).toMatchObject({ status: 'running', attempt: 2 });
      expect(await repos().transcript.transcript(conv)).toEqual([]);
      expect(await repos().turns.parkTurn(first.id, { parked: true }, 'fresh')).toBe(true);
      expect(await repos().turns.turn(first.id)).toMatchObject({ status: 'parked', state: { parked: true } });
    });

    it('defers a turn: an opened one disappears and its rows are free again; a resumed one gets its attempt back', async () => {
      const key = `http/-/defer-${u()}/-`;
      const a = await repos().inbox.accept(msg(`d-1-${u()}`, key, 'a'));
      const conv = a.conversationId;
      const opened = (await start(conv)).turn!;
      await repos().turns.deferTurn(opened.id, conv, 'lease-1');
      expect(await repos().turns.turn(opened.id)).toBeUndefined();
      expect((await repos().inbox.pending(conv)).map((r) => r.turnId)).toEqual([null]);
      const again = await start(conv, { lease: 'lease-2' }); // the lease was given up
      expect(again.turn).toMatchObject({ seq: 1, attempt: 1 });
      const resumed = await start(conv, { lease: 'lease-2' });
      expect(resumed.turn).toMatchObject({ id: again.turn!.id, attempt: 2 });
      await repos().turns.deferTurn(again.turn!.id, conv, 'lease-2');
      expect(await repos().turns.turn(again.turn!.id)).toMatchObject({ attempt: 1, status: 'running' });
      expect((await repos().inbox.pending(conv)).map((r) => r.turnId)).toEqual([again.turn!.id]);
      expect((await start(conv, { lease: 'lease-3' })).conversation).not.toBeNull();
    });

    it('attack: a drain whose lease another one took cannot defer the turn: the holder keeps its resumed attempt and its lease', async () => {
      const key = `http/-/defer-late-${u()}/-`;
      const a = await repos().inbox.accept(msg(`dl-1-${u()}`, key, 'a'));
      const conv = a.conversationId;
      const first = (await start(conv, { lease: 'late', leaseMs: 1 })).turn!;
      await new Promise((r) => setTimeout(r, 20));
      // The lease expired; another drain took it and resumed the turn.
      const resumed = await start(conv, { lease: 'holder' });
      expect(resumed.turn).toMatchObject({ id: first.id, attempt: 2 });
      await repos().turns.deferTurn(first.id, conv, 'late');
      expect(await repos().turns.turn(first.id)).toMatchObject({ status: 'running', attempt: 2 });
      expect((await repos().inbox.pending(conv)).map((r) => r.turnId)).toEqual([first.id]);
      // The holder's lease stands: another drain is still kept out.
      expect((await start(conv, { lease: 'third' })).conversation).toBeNull();
    });

    it('starts from the newest transcript window of its agent, the summary, and the memory its sender may see', async () => {
      const key = `http/-/window-${u()}/-`;
      const ten = Array.from({ length: 10 }, (_, i) => ({ role: 'user', content: `m${i}`, timestamp: i }));
      const first = await closedTurn(repos, key, ten, {});
      const conv = first.conversationId;
      const g = await repos().memory.addMemory('global', '', `g-${key}`);
      await repos().memory.addMemory('sender', 'http:u1', `s-${key}`);
      await repos().memory.addMemory('sender', 'http:u2', 'other sender');
      await repos().memory.addMemory('sender', 'sms:u1', 'same id, another channel');
      await repos().memory.addMemory('conversation', conv, `c-${key}`);
      await repos().memory.addMemory('conversation', 'c_elsewhere', 'another conversation');
      await repos().inbox.accept(msg(`w-2-${u()}`, key));
      const t2 = await start(conv, { historyLimits: { default: 3 }, memoryLimit: 50 });
      expect(t2.context!.history.map((x) => (x as unknown as { content: string }).content)).toEqual(['m7', 'm8', 'm9']);
      const ids = t2.context!.historyIds;
      expect([...ids].sort((x, y) => x - y)).toEqual(ids);
      const mem = t2.context!.memory;
      expect(mem.slice(-2)).toEqual([`s-${key}`, `c-${key}`]); // oldest first, among notes newest first
      expect(mem).toContain(`g-${key}`);
      expect(mem).not.toContain('other sender');
      expect(mem).not.toContain('same id, another channel');
      expect(mem).not.toContain('another conversation');
      expect((await start(conv, { memoryLimit: 1 })).context!.memory).toEqual([`c-${key}`]);
      // A compaction moves the window past what the summary covers.
      expect(await repos().transcript.saveSummary(conv, ids[1]!, 'the gist')).toBe(true);
      expect(await repos().transcript.saveSummary(conv, ids[0]!, 'older gist')).toBe(false); // only forward
      const after = await start(conv, { historyLimits: { default: 50 } });
      expect(after.context!.summary).toBe('the gist');
      expect(after.context!.history.map((x) => (x as unknown as { content: string }).content)).toEqual(['m9']);
      // The window follows the conversation's agent; an unknown agent gets the default one.
      const small = await repos().inbox.accept(msg(`w-s-${u()}`, `http/-/small-${u()}/-`), 'small');
      expect((await repos().conversations.conversation(small.conversationId))!.agent).toBe('small');
      const st = (await start(small.conversationId, { historyLimits: { default: 50, small: 0 } })).turn!;
      await repos().turns.finishTurn({ turnId: st.id, status: 'done', messages: ten, finishReason: 'stop', lease: 'lease-1' });
      await repos().inbox.accept({ ...msg(`w-s2-${u()}`, (await repos().conversations.conversation(small.conversationId))!.key) });
      expect((await start(small.conversationId, { historyLimits: { default: 50, small: 2 } })).context!.history).toHaveLength(2);
      // A message that carries its own context comes without the transcript.
      await repos().inbox.accept(msg(`w-3-${u()}`, key, 'hi', { context: [{ role: 'user', text: 'earlier' }] }));
      await repos().turns.finishTurn({ turnId: after.turn!.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect((await start(conv)).context!.history).toEqual([]);
      await repos().memory.deleteMemory(g);
    });
  });

  describe('transcript', () => {
    it('reads a window, catches up after an id, and gives a turn its reply text', async () => {
      const key = `http/-/transcript-${u()}/-`;
      const messages = [
        { role: 'user', content: 'question', timestamp: 1 },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'part one' },
            { type: 'toolCall', id: 'x' },
          ],
          timestamp: 2,
        },
        { role: 'toolResult', content: [{ type: 'text', text: 'tool output' }], timestamp: 3 },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'part ' },
            { type: 'text', text: 'two' },
          ],
          timestamp: 4,
        },
      ];
      const { conversationId, turnId } = await closedTurn(repos, key, messages);
      expect(await repos().transcript.transcript(conversationId, 2)).toEqual(messages.slice(2));
      const all = await repos().transcript.messagesAfter(conversationId, 0);
      expect(all.map((m) => [m.role, m.turnId])).toEqual(messages.map((m) => [m.role, turnId]));
      expect(all[0]!.createdAt).toBeInstanceOf(Date);
      expect(all.map((m) => m.content)).toEqual(messages);
      expect((await repos().transcript.messagesAfter(conversationId, Number(all[1]!.id), 1)).map((m) => m.content)).toEqual([messages[2]]);
      expect(await repos().transcript.turnReply(turnId)).toBe('part one\n\npart two');
      expect(await repos().transcript.turnReply('t_none')).toBe('');
    });

    it('searches the words of messages in the conversations the whole sender identity wrote in', async () => {
      const word = `kumquat${u().replace(/\W/g, '')}`;
      const mine = await closedTurn(repos, `sms/+1/${u()}/-`, [{ role: 'user', content: `my ${word} plans`, timestamp: 1 }], {
        channel: 'sms',
        sender: { id: 'UIDENT' },
      });
      await closedTurn(repos, `http/-/${u()}/-`, [{ role: 'assistant', content: [{ type: 'text', text: `their ${word} plans` }], timestamp: 1 }], {
        sender: { id: 'UIDENT' },
      });
      const hits = await repos().transcript.searchMessages(word, { sender: 'sms:UIDENT' });
      expect(hits.map((h) => [h.conversationId, h.role, h.snippet])).toEqual([[mine.conversationId, 'user', `my ${word} plans`]]);
      expect(hits[0]!.createdAt).toBeInstanceOf(Date);
      expect((await repos().transcript.searchMessages(`${word} plans`, { sender: 'http:UIDENT' })).map((h) => h.role)).toEqual(['assistant']); // text parts count
      expect(await repos().transcript.searchMessages(`${word} absent`, { sender: 'sms:UIDENT' })).toEqual([]); // every word must match
      for (const who of ['UIDENT', 'slack:UIDENT', '']) expect(await repos().transcript.searchMessages(word, { sender: who })).toEqual([]);
    });
  });

  describe('memory', () => {
    it("searches what a sender may see by words; forgets only the caller's own and its conversation's notes", async () => {
      const k = u();
      const add = (scope: 'global' | 'conversation' | 'sender', key: string, body: string) => repos().memory.addMemory(scope, key, body);
      const global = await add('global', '', `operator note ${k}`);
      const mine = await add('sender', `u1-${k}`, `about kiwis ${k}`);
      const theirs = await add('sender', `u2-${k}`, `about u2 ${k}`);
      const here = await add('conversation', `c1-${k}`, `in c1 ${k}`);
      const there = await add('conversation', `c2-${k}`, `in c2 ${k}`);
      expect(mine).toBeGreaterThan(global);
      const visible = await repos().memory.searchMemory(`c1-${k}`, `u1-${k}`, '');
      expect(visible.filter((n) => n.body.endsWith(k)).map((n) => n.id)).toEqual([here, mine, global]); // newest first
      expect((await repos().memory.searchMemory(`c1-${k}`, `u1-${k}`, `KIWIS or ${k}`)).map((n) => n.id)).toEqual([here, mine, global]); // any word
      expect((await repos().memory.searchMemory(`c1-${k}`, `u1-${k}`, 'kiwis')).map((n) => n.id)).toEqual([mine]);
      expect((await repos().memory.searchMemory(`c1-${k}`, `u1-${k}`, '', 1)).map((n) => n.id)).toEqual([here]);
      expect((await repos().memory.listMemory('sender', `u2-${k}`)).map((n) => [n.id, n.scope, n.scopeKey, n.body])).toEqual([
        [theirs, 'sender', `u2-${k}`, `about u2 ${k}`],
      ]);
      expect((await repos().memory.listMemory('conversation')).map((n) => n.id)).toEqual(expect.arrayContaining([there, here]));
      for (const id of [global, theirs, there, 99_999_999]) expect(await repos().memory.forgetMemory(id, `c1-${k}`, `u1-${k}`)).toBe(false);
      expect(await repos().memory.forgetMemory(here, `cX-${k}`, `c1-${k}`)).toBe(false); // a sender id equal to a conversation id reaches nothing
      expect(await repos().memory.forgetMemory(mine, `c1-${k}`, `u1-${k}`)).toBe(true);
      expect(await repos().memory.forgetMemory(here, `c1-${k}`, `u1-${k}`)).toBe(true);
      expect(await repos().memory.forgetMemory(mine, `c1-${k}`, `u1-${k}`)).toBe(false);
      expect(await repos().memory.deleteMemory(global)).toBe(true);
      expect(await repos().memory.deleteMemory(global)).toBe(false);
      await repos().memory.deleteMemory(theirs);
      await repos().memory.deleteMemory(there);
    });
  });

  describe('conversations', () => {
    it('finds a conversation by id and key; archives it so the key starts afresh; counts its state', async () => {
      const key = `http/-/conv-${u()}/-`;
      const first = await closedTurn(repos, key, [{ role: 'user', content: 'x', timestamp: 1 }]);
      const byKey = await repos().conversations.conversationByKey(key);
      expect(byKey).toMatchObject({ id: first.conversationId, key, channel: 'http', owner: null, agent: 'default' });
      expect(byKey!.createdAt).toBeInstanceOf(Date);
      expect(await repos().conversations.conversation(first.conversationId)).toMatchObject({ id: first.conversationId, key });
      expect(await repos().conversations.conversation('c_none')).toBeUndefined();
      const stats = await repos().conversations.conversationStats(key);
      expect(stats).toEqual({ id: first.conversationId, turns: 1, tokens: 0, running: false, parked: false, pendingApprovals: 0 });
      expect(await repos().conversations.conversationStats(`${key}-none`)).toBeUndefined();
      await repos().inbox.accept(msg(`cv-${u()}`, key));
      expect(await repos().conversations.waitingCount(key)).toEqual({ waiting: 1, running: false, mode: null, handoff: null });
      const t = (await starter(repos)(first.conversationId)).turn!;
      expect(await repos().conversations.waitingCount(key)).toEqual({ waiting: 0, running: true, mode: null, handoff: null });
      await repos().turns.finishTurn({ turnId: t.id, status: 'done', messages: [], finishReason: 'stop', usage: { totalTokens: 12 }, lease: 'lease-1' });
      expect((await repos().conversations.conversationStats(key))!).toMatchObject({ turns: 2, tokens: 12 });
      expect(await repos().conversations.setQueueMode(key, 'collect')).toBe(true);
      expect(await repos().conversations.setQueueMode(`${key}-none`, 'collect')).toBe(false);
      expect((await repos().conversations.waitingCount(key)).mode).toBe('collect');
      expect(await repos().conversations.waitingCount(`${key}-none`)).toEqual({ waiting: 0, running: false, mode: null, handoff: null });
      const listed = await repos().conversations.listConversations(5);
      expect(listed[0]).toMatchObject({ id: first.conversationId, turns: 2 });
      expect(listed[0]!.updatedAt).toBeInstanceOf(Date);
      expect(await repos().conversations.archiveConversation(key)).toBe(true);
      expect(await repos().conversations.archiveConversation(key)).toBe(false);
      expect(await repos().conversations.conversationByKey(key)).toBeUndefined();
      expect((await repos().conversations.conversation(first.conversationId))!.key).toMatch(new RegExp(`^${key.replace(/[/-]/g, '\\$&')}#archived-\\d+$`));
      const fresh = await repos().inbox.accept(msg(`cv2-${u()}`, key));
      expect(fresh.conversationId).not.toBe(first.conversationId);
    });
  });

  describe('turn journal', () => {
    it("keeps a running turn's model and tool steps while its lease is held; closing the turn deletes them", async () => {
      const a = await repos().inbox.accept(msg(`j-${u()}`, `http/-/journal-${u()}/-`));
      const turn = (await start(a.conversationId)).turn!;
      const fence = { conversationId: a.conversationId, lease: 'lease-1' };
      const j = repos().journal;
      expect(await j.turnJournal(turn.id)).toEqual({ models: [], tools: [] });
      const message = { role: 'assistant', content: [{ type: 'toolCall', id: 'call_1', name: 'file_write', arguments: { path: 'a' } }], stopReason: 'toolUse' };
      await j.recordModelStep(fence, { turnId: turn.id, index: 1, message: { ...message, n: 1 }, attempts: [{ slot: 's1', error: 'ok' }] });
      await j.recordModelStep(fence, { turnId: turn.id, index: 0, message, attempts: [] });
      await j.recordToolStarted(fence, { turnId: turn.id, toolCallId: 'call_1', tool: 'file_write' });
      await j.recordToolStarted(fence, { turnId: turn.id, toolCallId: 'call_2', tool: 'file_read' });
      const result = { content: [{ type: 'text', text: 'wrote a' }], isError: false, trace: { tool: 'file_write', ok: true, output: 'wrote a' } };
      await j.recordToolFinished(fence, { turnId: turn.id, toolCallId: 'call_1', tool: 'file_write', result });
      // Started again (an idempotent call run again): what finished stays finished.
      await j.recordToolStarted(fence, { turnId: turn.id, toolCallId: 'call_1', tool: 'file_write' });
      expect(await j.turnJournal(turn.id)).toEqual({
        models: [
          { turnId: turn.id, index: 0, message, attempts: [] },
          { turnId: turn.id, index: 1, message: { ...message, n: 1 }, attempts: [{ slot: 's1', error: 'ok' }] },
        ],
        tools: [
          { turnId: turn.id, toolCallId: 'call_1', tool: 'file_write', status: 'finished', result },
          { turnId: turn.id, toolCallId: 'call_2', tool: 'file_read', status: 'started' },
        ],
      });
      await repos().turns.finishTurn({ turnId: turn.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect(await j.turnJournal(turn.id)).toEqual({ models: [], tools: [] });
    });

    it('refuses a write of a drain whose lease is not held (another token, expired, released): lease_lost, nothing written', async () => {
      const a = await repos().inbox.accept(msg(`jf-${u()}`, `http/-/journal-fence-${u()}/-`));
      const conv = a.conversationId;
      const turn = (await start(conv, { leaseMs: 300 })).turn!;
      const j = repos().journal;
      const step = { turnId: turn.id, toolCallId: 'call_1', tool: 'file_write' };
      const lost = { code: 'lease_lost', retryable: true };
      await expect(j.recordToolStarted({ conversationId: conv, lease: 'lease-2' }, step)).rejects.toMatchObject(lost);
      await expect(
        j.recordModelStep({ conversationId: `c_${u()}`, lease: 'lease-1' }, { turnId: turn.id, index: 0, message: {}, attempts: [] }),
      ).rejects.toMatchObject(lost);
      await j.recordToolStarted({ conversationId: conv, lease: 'lease-1' }, step);
      await sleep(400); // expired, not yet taken by anyone
      await expect(
        j.recordToolFinished({ conversationId: conv, lease: 'lease-1' }, { ...step, result: { content: [], isError: false, trace: null } }),
      ).rejects.toMatchObject(lost);
      const taken = await start(conv, { lease: 'lease-2' });
      expect(taken.turn).toMatchObject({ id: turn.id, attempt: 2 });
      await expect(
        j.recordModelStep({ conversationId: conv, lease: 'lease-1' }, { turnId: turn.id, index: 0, message: {}, attempts: [] }),
      ).rejects.toMatchObject(lost);
      await j.recordModelStep({ conversationId: conv, lease: 'lease-2' }, { turnId: turn.id, index: 0, message: { ok: 1 }, attempts: [] });
      await repos().turns.releaseLease(conv, 'lease-2');
      await expect(j.recordToolStarted({ conversationId: conv, lease: 'lease-2' }, { ...step, toolCallId: 'call_9' })).rejects.toMatchObject(lost);
      expect(await j.turnJournal(turn.id)).toEqual({
        models: [{ turnId: turn.id, index: 0, message: { ok: 1 }, attempts: [] }],
        tools: [{ ...step, status: 'started' }],
      });
    });
  });

  describe('tool results', () => {
    it('keeps a result for its turn, readable only from that conversation', async () => {
      const { conversationId, turnId } = await closedTurn(repos, `http/-/tr-${u()}/-`, []);
      const id = await repos().toolResults.saveToolResult(turnId, 'shell_exec', 'a long output');
      expect(id).toMatch(/^tr_[0-9a-f]{16}$/);
      expect(await repos().toolResults.saveToolResult(turnId, 'shell_exec', 'again')).not.toBe(id);
      expect(await repos().toolResults.toolResult(id, conversationId)).toEqual({ content: 'a long output', turnId: turnId });
      const other = await closedTurn(repos, `http/-/tr-${u()}/-`, []);
      expect(await repos().toolResults.toolResult(id, other.conversationId)).toBeUndefined();
      expect(await repos().toolResults.toolResult('tr_0000000000000000', conversationId)).toBeUndefined();
    });
  });

  describe('console queries', () => {
    it('lists recent conversations with their latest turn status, and how long finished turns took', async () => {
      const key = `http/-/console-${u()}/-`;
      const { conversationId } = await closedTurn(repos, key, []);
      const [latest] = await repos().console.recentConversations(1);
      expect(latest).toMatchObject({ id: conversationId, key, channel: 'http', status: 'done', turns: 1 });
      expect(latest!.updatedAt).toBeInstanceOf(Date);
      const waiting = await repos().inbox.accept(msg(`cq-${u()}`, `http/-/console-${u()}/-`));
      expect((await repos().console.recentConversations(2)).map((c) => [c.id, c.status, c.turns])).toEqual([
        [waiting.conversationId, null, 0],
        [conversationId, 'done', 1],
      ]);
      const [l] = await repos().console.turnLatencies(1);
      expect(Number(l!.ms)).toBeGreaterThanOrEqual(0);
      expect(l!.finishedAt).toBeInstanceOf(Date);
      expect(await repos().console.turnLatencies(3)).toHaveLength(3);
    });

    it("names a conversation's latest sender, and leaves the time a turn waited for approval out of its latency", async () => {
      const key = `http/-/console-park-${u()}/-`;
      const a = await repos().inbox.accept(msg(`cqp-${u()}`, key, 'run it', { sender: { id: 'u9', name: 'Ada' } }));
      const t = (await start(a.conversationId)).turn!;
      expect(await repos().turns.parkTurn(t.id, { step: 1 })).toBe(true);
      const [parked] = await repos().console.recentConversations(1);
      expect(parked).toMatchObject({ id: a.conversationId, status: 'parked', senderName: 'Ada', senderId: 'http:u9' });
      expect(parked!.lastActivity).toBeInstanceOf(Date);
      const ap = await repos().approvals.create({
        conversationId: a.conversationId,
        turnId: t.id,
        toolCallId: 'call_1',
        tool: 'shell_exec',
        args: { command: 'ls' },
        argsHash: 'h',
        pattern: 'ls',
        tier: 'ask',
        reasons: [],
        rulePermitted: true,
        requester: 'http:u9',
        channel: 'http',
        expiresAt: new Date(Date.now() + 60_000),
      });
      await new Promise((r) => setTimeout(r, 400));
      await repos().approvals.decide(ap.code, 'approved', 'op', 'test');
      await repos().turns.unparkTurn(t.id);
      await repos().turns.finishTurn({ turnId: t.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      const [l] = await repos().console.turnLatencies(1);
      expect(Number(l!.ms)).toBeGreaterThanOrEqual(350); // timers may fire a few ms early by the wall clock
      expect(Number(l!.parkedMs)).toBeGreaterThanOrEqual(350);
      expect(Number(l!.parkedMs)).toBeLessThanOrEqual(Number(l!.ms));
    });
  });
}
