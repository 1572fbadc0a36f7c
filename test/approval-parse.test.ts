import { describe, expect, it } from 'vitest';
import { parseApprovalAnswer } from '../src/approvals/parse.js';

describe('approval answers typed in a channel', () => {
  it.each([
    ['YES K7Q4P', 'approve', 'K7Q4P'],
    ['yes k7q4p', 'approve', 'K7Q4P'],
    ['  Yes,  K7Q4P. ', 'approve', 'K7Q4P'],
    ['approve: k7q4p!', 'approve', 'K7Q4P'],
    ['NO K7Q4P', 'deny', 'K7Q4P'],
    ['deny k7q4p', 'deny', 'K7Q4P'],
    ['always allow K7Q4P', 'always', 'K7Q4P'],
    ['YES K7Q4P\n\n> On Monday the gateway wrote: reply YES K7Q4P or NO K7Q4P', 'approve', 'K7Q4P'],
  ])('%j → %s %s', (text, decision, code) => {
    expect(parseApprovalAnswer(text)).toEqual({ decision, code });
  });
  it.each(['yes', 'yes please', 'YES K7Q4', 'YES K7Q4PP', 'YES K0Q4P' /* 0 is not in the alphabet */, 'I said yes K7Q4P yesterday', 'maybe K7Q4P', ''])('ignores %j', (text) => {
    expect(parseApprovalAnswer(text)).toBeNull();
  });
});
