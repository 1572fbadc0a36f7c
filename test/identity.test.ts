/** The one identity type (kernel/identity.ts): its canonical form, parsing, and how configured lists name identities. */
import { describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import { AccessStore } from '../adapters/store/access.js';
import { migrate } from '../adapters/store/migrate.js';
import { toInbound as emailInbound } from '../channels/email/inbound.js';
import type { InboundMail } from '../channels/email/parse.js';
import { entryForms, entryNames, formatIdentity, type Identity, identityOf, localId, parseIdentity, parseLocal, sameIdentity } from '../kernel/identity.js';
import { AccessControl } from '../src/access.js';
import { configSchema } from '../src/config.js';

describe('identity: canonical form', () => {
  it('is <channel>:<id>, and slack:<team>:<user> on Slack', () => {
    expect(formatIdentity({ channel: 'slack', workspace: 'T123', id: 'U456' })).toBe('slack:T123:U456');
    expect(formatIdentity({ channel: 'slack', id: 'U456' })).toBe('slack:-:U456');
    expect(formatIdentity({ channel: 'discord', id: '80351110224678912' })).toBe('discord:80351110224678912');
    // A Discord user id is global: a guild would only split one person in two.
    expect(formatIdentity({ channel: 'discord', workspace: 'G1', id: '8035' })).toBe('discord:8035');
    expect(formatIdentity({ channel: 'sms', id: '+15551234567' })).toBe('sms:+15551234567');
    expect(formatIdentity({ channel: 'sms', id: 'whatsapp:+15551234567' })).toBe('sms:whatsapp:+15551234567');
    expect(formatIdentity({ channel: 'email', id: 'alice@example.com' })).toBe('email:alice@example.com');
    expect(formatIdentity({ channel: 'webhook', id: 'crm:alice' })).toBe('webhook:crm:alice');
    expect(formatIdentity({ channel: 'http', id: 'op:3f2a' })).toBe('http:op:3f2a');
  });

  it('parses back what it formats, whatever the id holds', () => {
    const cases: Identity[] = [
      { channel: 'slack', workspace: 'T123', id: 'U456' },
      { channel: 'slack', id: 'U456' },
      { channel: 'slack', workspace: 'E1:T2', id: 'U:3' },
      { channel: 'slack', workspace: '-', id: 'U1' },
      { channel: 'slack', workspace: '100%', id: 'U1' },
      { channel: 'email', id: 'unverified:a@b.example' },
      { channel: 'webhook', id: 'crm:slack:T1:U1' },
      { channel: 'sms', id: '+1555' },
      { channel: 'mcp', id: 'op:abc' },
    ];
    for (const i of cases) {
      const s = formatIdentity(i);
      expect(parseIdentity(s)).toEqual(i);
      expect(parseLocal(i.channel, localId(i))).toEqual(i);
    }
    // Workspaces are escaped, so the parts cannot run into each other.
    expect(formatIdentity({ channel: 'slack', workspace: 'E1:T2', id: 'U3' })).toBe('slack:E1%3AT2:U3');
    expect(formatIdentity({ channel: 'slack', workspace: '-', id: 'U1' })).not.toBe(formatIdentity({ channel: 'slack', id: 'U1' }));
  });

  it('refuses what is not an identity', () => {
    for (const s of ['', 'U456', ':U456', 'slack:', 'slack:T1', 'slack:T1:', 'sms:', 'Slack:T1:U1', 'sl ack:x', '9x:y'])
      expect(parseIdentity(s)).toBeUndefined();
    expect(() => formatIdentity({ channel: 'sms', id: '' })).toThrow(/empty id/);
    expect(() => formatIdentity({ channel: 'a:b', id: 'x' })).toThrow(/bad channel/);
  });

  it('the same id on two channels, or in two Slack teams, is two people', () => {
    const slack = { channel: 'slack', workspace: 'T1', id: 'U1' };
    expect(sameIdentity(slack, { channel: 'sms', id: 'U1' })).toBe(false);
    expect(sameIdentity(slack, { channel: 'slack', workspace: 'T2', id: 'U1' })).toBe(false);
    expect(sameIdentity(slack, { channel: 'slack', workspace: 'T1', id: 'U1' })).toBe(true);
    // A webhook named like a channel cannot write another channel's canonical form: its senders are webhook:…
    const hook = identityOf({ channel: 'webhook', sender: { id: 'slack:T1:U1' } });
    expect(formatIdentity(hook)).toBe('webhook:slack:T1:U1');
    expect(sameIdentity(hook, slack)).toBe(false);
    // A hook named "unverified" is not the unverified email sender of the same address.
    const mail = {
      from: 'mallory@example.com',
      authenticated: false,
      subject: 's',
      references: [],
      text: 'hi',
      attachments: [],
      replyAddress: 'mallory@example.com',
      externalId: '<1@x>',
      automated: null,
    } as unknown as InboundMail;
    const email = identityOf(emailInbound(mail, { ourAddress: 'bot@example.test', requireAuthenticatedSender: true }));
    expect(formatIdentity(email)).toBe('email:unverified:mallory@example.com');
    expect(formatIdentity(identityOf({ channel: 'webhook', sender: { id: 'unverified:mallory@example.com' } }))).toBe('webhook:unverified:mallory@example.com');
    // The workspace counts only on channels that have workspaces.
    expect(identityOf({ channel: 'slack', sender: { id: 'U1', workspace: 'T1' } })).toEqual(slack);
    expect(identityOf({ channel: 'sms', sender: { id: 'U1', workspace: 'T1' } })).toEqual({ channel: 'sms', id: 'U1' });
  });
});

describe('identity: entries of per-channel lists (operators, allowlists, access rows)', () => {
  const u1 = { channel: 'slack', workspace: 'T1', id: 'U1' };
  it('a Slack entry is the user (any team of the app) or team:user; elsewhere the id', () => {
    expect(entryNames('U1', u1)).toBe(true);
    expect(entryNames('T1:U1', u1)).toBe(true);
    expect(entryNames('T2:U1', u1)).toBe(false);
    expect(entryNames('slack:T1:U1', u1)).toBe(false);
    expect(entryForms(u1)).toEqual(['T1:U1', 'U1']);
    expect(entryForms({ channel: 'slack', id: 'U1' })).toEqual(['-:U1', 'U1']);
    expect(entryNames('+1555', { channel: 'sms', id: '+1555' })).toBe(true);
    expect(entryNames('crm:alice', { channel: 'webhook', id: 'crm:alice' })).toBe(true);
    expect(entryNames('alice', { channel: 'webhook', id: 'crm:alice' })).toBe(false);
    expect(entryForms({ channel: 'sms', id: '+1555' })).toEqual(['+1555']);
  });
});

describe('identity: access control compares whole identities', () => {
  it("a Slack operator or allowed user is nobody on SMS; a Slack pairing holds for that user's team", async () => {
    const db = await openPglite();
    try {
      await migrate(db);
      const store = new AccessStore(db);
      const config = configSchema.parse({
        access: { slack: { policy: 'pairing', allow: ['UALLOWED'] }, sms: { policy: 'allowlist' } },
        approvals: { operators: { slack: ['UOP'] } },
      });
      const access = new AccessControl(store, config);
      const slack = (id: string, workspace = 'T1') => ({ channel: 'slack', workspace, id });
      expect(await access.check(slack('UOP'))).toEqual({ allowed: true });
      expect(await access.check(slack('UALLOWED', 'T9'))).toEqual({ allowed: true });
      for (const id of ['UOP', 'UALLOWED']) expect((await access.check({ channel: 'sms', id })).allowed).toBe(false);
      // Pairing: the row is the user of that team.
      const asked = await access.check(slack('UNEW'));
      expect(asked.allowed).toBe(false);
      const code = /pairing code (\w+)/.exec((asked as { reply: string }).reply)![1]!;
      expect((await store.list('pending')).map((r) => [r.channel, r.sender])).toEqual([['slack', 'T1:UNEW']]);
      await store.approvePairing(code, 'http:op');
      expect(await access.check(slack('UNEW'))).toEqual({ allowed: true });
      expect((await access.check(slack('UNEW', 'T2'))).allowed).toBe(false);
      expect((await access.check({ channel: 'sms', id: 'T1:UNEW' })).allowed).toBe(false);
      // An operator's `access allow slack UBARE` names that user in any team; the most specific row wins.
      await store.setStatus('slack', 'UBARE', 'allowed', 'http:op');
      expect(await access.check(slack('UBARE', 'T7'))).toEqual({ allowed: true });
      await store.setStatus('slack', 'T7:UBARE', 'denied', 'http:op');
      expect(await access.check(slack('UBARE', 'T7'))).toEqual({ allowed: false });
      expect(await access.check(slack('UBARE', 'T8'))).toEqual({ allowed: true });
    } finally {
      await db.close();
    }
  });
});
