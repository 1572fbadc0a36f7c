/**
 * The catch-up decision every channel shares (src/channel/catch-up.ts): which of the messages sent
 * while the gateway was down are answered, which are skipped and why, and who gets the one offline
 * reply; the cursors of the last message seen per place, across a restart.
 */
import { describe, expect, it } from 'vitest';
import {
  CatchUpCursors,
  catchUpSchema,
  compareSlackTs,
  compareSnowflakes,
  DEFAULT_OFFLINE_REPLY,
  offlineReplyText,
  planCatchUp,
} from '../src/channel/catch-up.js';
import { MemoryChannelState } from './support/memory-repos/channel-repos.js';
import { Tables } from './support/memory-repos/tables.js';

const NOW = new Date('2026-01-01T12:00:00Z');
const ago = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000);
const msg = (id: string, minutesAgo: number, place = 'c1') => ({ id, at: ago(minutesAgo), place });

describe('catch-up policy', () => {
  it('defaults: an hour, 20 messages per place, the default offline reply', () => {
    const p = catchUpSchema.parse(undefined);
    expect(p).toEqual({ enabled: true, maxAgeMinutes: 60, maxMessages: 20, offlineReply: true });
    expect(offlineReplyText(p)).toBe(DEFAULT_OFFLINE_REPLY);
    expect(offlineReplyText({ ...p, offlineReply: false })).toBeNull();
    expect(offlineReplyText({ ...p, offlineReply: 'back now, ask again' })).toBe('back now, ask again');
  });

  it('refuses what is not a policy', () => {
    for (const bad of [{ maxAgeMinutes: 0 }, { maxMessages: -1 }, { maxMessages: 5000 }, { offlineReply: '' }, { offlineReply: 3 }, { unknown: 1 }]) {
      expect(catchUpSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it('answers the young ones in the order sent; skips the old ones; one offline reply per place, to its newest skipped message', () => {
    const policy = catchUpSchema.parse({ maxAgeMinutes: 30 });
    const plan = planCatchUp([msg('3', 5), msg('1', 90), msg('2', 45), msg('4', 1), msg('9', 120, 'c2')], policy, NOW);
    expect(plan.answer.map((m) => m.id)).toEqual(['3', '4']);
    expect(plan.skipped.map((s) => [s.message.id, s.reason])).toEqual([
      ['9', 'catch_up_too_old'],
      ['1', 'catch_up_too_old'],
      ['2', 'catch_up_too_old'],
    ]);
    expect(plan.apologize.map((m) => m.id).sort()).toEqual(['2', '9']);
  });

  it('keeps the newest maxMessages of a place; the older ones are skipped as too many', () => {
    const policy = catchUpSchema.parse({ maxMessages: 2, offlineReply: false });
    const plan = planCatchUp([msg('a', 4), msg('b', 3), msg('c', 2), msg('d', 1), msg('x', 2, 'c2')], policy, NOW);
    expect(plan.answer.map((m) => m.id)).toEqual(['c', 'x', 'd']);
    expect(plan.skipped.map((s) => [s.message.id, s.reason])).toEqual([
      ['a', 'catch_up_too_many'],
      ['b', 'catch_up_too_many'],
    ]);
    expect(plan.apologize).toEqual([]);
  });

  it('enabled: false skips everything', () => {
    const plan = planCatchUp([msg('a', 1)], catchUpSchema.parse({ enabled: false }), NOW);
    expect(plan.answer).toEqual([]);
    expect(plan.apologize.map((m) => m.id)).toEqual(['a']);
  });

  it('orders ids without losing precision', () => {
    expect(compareSnowflakes('1099511627776000001', '1099511627776000002')).toBeLessThan(0);
    expect(compareSnowflakes('99', '100')).toBeLessThan(0);
    expect(compareSlackTs('1700000000.000100', '1700000000.000099')).toBeGreaterThan(0);
    expect(compareSlackTs('1700000000.1', '1700000000.000100')).toBeGreaterThan(0);
    expect(compareSlackTs('1700000001.000000', '1700000000.999999')).toBeGreaterThan(0);
  });

  it('cursors survive a restart and only move forward', async () => {
    const state = new MemoryChannelState(new Tables());
    const a = new CatchUpCursors(state, 'discord', 'bot', compareSnowflakes, 10);
    await a.load();
    a.seen('c1', '100');
    a.seen('c1', '99');
    a.seen('c2', '7');
    await a.flush();
    const b = new CatchUpCursors(state, 'discord', 'bot', compareSnowflakes, 10);
    b.seen('c1', '101'); // seen before the load finished: newer than the stored one, kept
    expect(await b.load()).toEqual({ c1: '101', c2: '7' });
  });
});
