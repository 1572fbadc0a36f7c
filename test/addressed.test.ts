/** addressedToMe and its helpers: pure rules over platform-neutral facts. */
import { describe, expect, it } from 'vitest';
import { type AddressFacts, addressedToMe, botNames, groupsSchema, nameAtLineStart } from '../src/channel/addressed.js';

const policy = (p: Record<string, unknown> = {}) => groupsSchema({ respondIn: 'threads' }).parse(p);
const room: AddressFacts = { isDirect: false, mentionsBot: false };

describe('addressedToMe', () => {
  it('a DM is always addressed; a room message only when something addresses the bot', () => {
    expect(addressedToMe({ ...room, isDirect: true }, policy())).toEqual({ addressed: true, why: 'direct' });
    expect(addressedToMe(room, policy())).toEqual({ addressed: false, why: 'not_addressed' });
    expect(addressedToMe({ ...room, mentionsBot: true }, policy())).toEqual({ addressed: true, why: 'mention' });
    expect(addressedToMe({ ...room, mentionsBotRole: true }, policy())).toEqual({ addressed: true, why: 'role' });
    expect(addressedToMe({ ...room, replyToBot: true }, policy())).toEqual({ addressed: true, why: 'reply' });
    expect(addressedToMe({ ...room, startsWithBotName: true }, policy())).toEqual({ addressed: true, why: 'name' });
  });

  it('someone else mentioned and not the bot: silence, even in a thread the bot is in or with respondIn all', () => {
    const other = { ...room, mentionsOthers: true, inBotThread: true };
    expect(addressedToMe(other, policy())).toEqual({ addressed: false, why: 'someone_else' });
    expect(addressedToMe(other, policy({ respondIn: 'all' }))).toEqual({ addressed: false, why: 'someone_else' });
    // Mentioning the bot as well addresses it.
    expect(addressedToMe({ ...other, mentionsBot: true }, policy()).addressed).toBe(true);
  });

  it('respondIn: mentions ignores the bot thread; threads answers it; all answers every message', () => {
    const thread = { ...room, inBotThread: true };
    expect(addressedToMe(thread, policy({ respondIn: 'mentions' })).addressed).toBe(false);
    expect(addressedToMe(thread, policy({ respondIn: 'threads' }))).toEqual({ addressed: true, why: 'thread' });
    expect(addressedToMe(room, policy({ respondIn: 'all' }))).toEqual({ addressed: true, why: 'all' });
  });

  it('another bot: ignored unless one of its ids is allowed, even in a DM or with a mention', () => {
    const bot = { ...room, mentionsBot: true, fromBot: { ids: ['B01', 'U0BOT'] } };
    expect(addressedToMe(bot, policy())).toEqual({ addressed: false, why: 'bot' });
    expect(addressedToMe({ ...bot, isDirect: true }, policy())).toEqual({ addressed: false, why: 'bot' });
    expect(addressedToMe(bot, policy({ allowBots: ['U0BOT'] }))).toEqual({ addressed: true, why: 'mention' });
    // Allowed, it must still address the bot.
    expect(addressedToMe({ ...bot, mentionsBot: false }, policy({ allowBots: ['B01'] })).addressed).toBe(false);
  });

  it('nameTrigger false turns the name off', () => {
    expect(addressedToMe({ ...room, startsWithBotName: true }, policy({ nameTrigger: false })).addressed).toBe(false);
  });
});

describe('nameAtLineStart and botNames', () => {
  it('the name at the start of any line, as a whole word, any case', () => {
    const names = ['Switchboard'];
    expect(nameAtLineStart('switchboard, what is the time?', names)).toBe(true);
    expect(nameAtLineStart('Thanks all.\n@Switchboard: summarize this', names)).toBe(true);
    expect(nameAtLineStart('  > SWITCHBOARD what now', names)).toBe(true);
    expect(nameAtLineStart('hey switchboard, you there?', names)).toBe(false);
    expect(nameAtLineStart('switchboards are old tech', names)).toBe(false);
    expect(nameAtLineStart('switchboard', [])).toBe(false);
  });

  it('hostile names and texts: regex characters are literal, a huge text costs a bounded look', () => {
    expect(nameAtLineStart('a.*b hello', ['a.*b'])).toBe(true);
    expect(nameAtLineStart('axxxb hello', ['a.*b'])).toBe(false);
    expect(nameAtLineStart('(bot hello', ['(bot'])).toBe(true);
    const huge = `${'x'.repeat(1_000_000)}\n`.repeat(5) + 'switchboard hi';
    expect(nameAtLineStart(huge, ['switchboard'])).toBe(true);
    const manyLines = `${'chatter\n'.repeat(200)}switchboard hi`;
    expect(nameAtLineStart(manyLines, ['switchboard'])).toBe(false);
  });

  it('botNames: the platform names by default, the configured list, or none', () => {
    expect(botNames(policy(), ['switchboard', 'Switchboard', undefined, ''])).toEqual(['switchboard', 'Switchboard']);
    expect(botNames(policy({ nameTrigger: ['Sb', 'Board'] }), ['switchboard'])).toEqual(['Sb', 'Board']);
    expect(botNames(policy({ nameTrigger: false }), ['switchboard'])).toEqual([]);
  });

  it('the schema: defaults, ambient needs a classifier slot, unknown keys refused', () => {
    expect(policy()).toEqual({ respondIn: 'threads', nameTrigger: true, allowBots: [], botLoopPerMinute: 3, ambientPerHour: 0 });
    expect(groupsSchema({ respondIn: 'mentions' }).parse(undefined).respondIn).toBe('mentions');
    expect(() => policy({ ambientPerHour: 2 })).toThrow(/classifierSlot/);
    expect(() => policy({ respondin: 'all' })).toThrow();
    expect(() => policy({ respondIn: 'always' })).toThrow();
  });
});
