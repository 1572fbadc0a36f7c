import { describe, expect, it } from 'vitest';
import { answerHint, parseApprovalAnswer } from '../src/approvals/parse.js';

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
  it.each([
    ['ALWAYS K7Q4P sender', 'K7Q4P', 'sender'],
    ['always allow k7q4p global', 'K7Q4P', 'global'],
    ['Always K7Q4P, conversation.', 'K7Q4P', 'conversation'],
  ])('%j → always %s, scope %s', (text, code, scope) => {
    expect(parseApprovalAnswer(text)).toEqual({ decision: 'always', code, scope });
  });
  it.each(['YES K7Q4P global', 'NO K7Q4P sender', 'ALWAYS K7Q4P everywhere', 'ALWAYS K7Q4P constructor', 'ALWAYS K7Q4P global please'])(
    'ignores %j (a scope is only for ALWAYS, and only a known one)',
    (text) => {
      expect(parseApprovalAnswer(text)).toBeNull();
    },
  );
  it('hints ALWAYS only when an exact rule is possible, and says why not otherwise', () => {
    expect(answerHint('K7Q4P', true)).toBe(
      'Reply YES K7Q4P to approve or NO K7Q4P to refuse (ALWAYS K7Q4P allows exactly this call from now on in this conversation; ALWAYS K7Q4P sender or ALWAYS K7Q4P global to widen it).',
    );
    expect(answerHint('K7Q4P', false, ['"Always allow" is not offered: it is a pipeline (|)'])).toBe(
      'Reply YES K7Q4P to approve or NO K7Q4P to refuse. "Always allow" is not offered for this call: it is a pipeline (|).',
    );
    expect(answerHint('K7Q4P', false)).not.toMatch(/ALWAYS/);
  });
  it.each(['yes', 'yes please', 'YES K7Q4', 'YES K7Q4PP', 'YES K0Q4P' /* 0 is not in the alphabet */, 'I said yes K7Q4P yesterday', 'maybe K7Q4P', ''])(
    'ignores %j',
    (text) => {
      expect(parseApprovalAnswer(text)).toBeNull();
    },
  );
});
