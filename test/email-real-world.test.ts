/**
 * The email channel against mail as real clients write it, end to end through a private Dovecot
 * (raw RFC 5322 messages appended as a receiving server would), a real gateway, the SMTP sink and
 * the fake LLM: attribution lines with the name after the verb (Dutch, Norwegian, Polish…), UTF-8
 * labelled ISO-8859-1, auto-replies known only by their subject or Exchange's headers, and mail
 * that came while the gateway was down (the IMAP UID cursor across restarts, channels.email.catchUp).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { repairMislabeledUtf8 } from '../channels/email/charset.js';
import { stripQuotesAndSignature } from '../channels/email/clean.js';
import { readMail } from '../channels/email/parse.js';
import type { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { authResults, newMessageId, TestMailbox } from './fakes/email-mailbox.js';
import { type SentMail, SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const BOT = 'bot@example.test';
const JAN = 'jan@example.nl';

/** A raw message as a client sends it (CRLF, headers as given, the body's bytes untouched). */
function raw(headers: Array<[string, string]>, body: string | Buffer): Buffer {
  const head = `${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), typeof body === 'string' ? Buffer.from(body.replace(/\r?\n/g, '\r\n'), 'utf8') : body]);
}

function personal(from: string, subject: string, messageId: string, extra: Array<[string, string]> = []): Array<[string, string]> {
  return [
    authResults(from.split('@')[1]!, true),
    ...extra,
    ['From', `Jan Jansen <${from}>`],
    ['To', `<${BOT}>`],
    ['Subject', subject],
    ['Date', new Date().toUTCString()],
    ['Message-ID', messageId],
    ['MIME-Version', '1.0'],
  ];
}

describe('email: what real clients write (pure parts)', () => {
  it('cuts attribution lines with the name after the verb, in several languages', () => {
    expect(stripQuotesAndSignature('Prima, dank je.\n\nOp 1 jan. 2026 om 10:00 schreef Jan Jansen <jan@x.nl> het volgende:\n\nHoe laat?\nGroet')).toBe(
      'Prima, dank je.',
    );
    expect(stripQuotesAndSignature('Takk!\n\nDen 1. jan. 2026 skrev Ola Nordmann <a@b.no>:\nHei\nder')).toBe('Takk!');
    expect(stripQuotesAndSignature('Tack!\n\nDen 1 jan. 2026 kl. 10:00 skrev Ola Nordmann <a@b.se>:\n\nHej')).toBe('Tack!');
    expect(stripQuotesAndSignature('Dzięki\n\nW dniu 1.01.2026 o 10:00, Jan Kowalski <j@k.pl> pisze:\nczęść')).toBe('Dzięki');
    expect(stripQuotesAndSignature('Grazie\n\nIl giorno lun 1 gen 2026 alle ore 10:00 Mario Rossi <m@r.it> ha scritto:\nciao')).toBe('Grazie');
    expect(stripQuotesAndSignature('Obrigado\n\nEm seg., 1 de jan. de 2026 às 10:00, João <j@p.br> escreveu:\noi')).toBe('Obrigado');
    // Apple Mail's Dutch: "heeft … het volgende geschreven:".
    expect(stripQuotesAndSignature('Ja graag\n\nOp 1 jan. 2026 om 10:00 heeft Jan Jansen <jan@x.nl> het volgende geschreven:\n\noud')).toBe('Ja graag');
    // Bottom-posted under a Norwegian attribution: the answer below the quote is kept.
    expect(stripQuotesAndSignature('Den 1. jan. 2026 skrev Bot <bot@x.no>:\n> Svar JA K7Q2P\n\nJA K7Q2P')).toBe('JA K7Q2P');
    // Ordinary text that merely starts like one is not cut.
    expect(stripQuotesAndSignature('On Monday we ship.\nDen Haag is fine: wrote it down')).toBe('On Monday we ship.\nDen Haag is fine: wrote it down');
    expect(stripQuotesAndSignature('YES K7Q2P')).toBe('YES K7Q2P');
  });

  it('stays fast on hostile text (the reply parser sees a bounded head)', () => {
    const hostile = ['01.01.2026 10:00 '.repeat(20_000), 'Op x\n'.repeat(20_000), `Op ${'a '.repeat(50_000)}`, 'W dniu '.repeat(20_000)];
    for (const text of hostile) {
      const out = stripQuotesAndSignature(text);
      expect(out.length).toBeGreaterThan(0);
    }
  });

  it('repairs UTF-8 read as ISO-8859-1 or Windows-1252, and leaves real Latin-1 alone', () => {
    expect(repairMislabeledUtf8('GrÃ¼ÃŸe aus KÃ¶ln â€“ schÃ¶n')).toBe('Grüße aus Köln – schön');
    expect(repairMislabeledUtf8(Buffer.from('Dziękuję, już', 'utf8').toString('latin1'))).toBe('Dziękuję, już');
    expect(repairMislabeledUtf8('café au lait, Ã  la carte?')).toBe('café au lait, Ã  la carte?');
    expect(repairMislabeledUtf8('plain ascii')).toBe('plain ascii');
    expect(repairMislabeledUtf8('emoji 😀 and Ã©')).toBe('emoji 😀 and Ã©');
  });

  it('reads a mislabelled body and subject right; a correctly labelled Latin-1 mail stays as it is', async () => {
    const wrong = raw(
      [
        ['From', `=?ISO-8859-1?Q?J=C3=BCrgen?= <j@example.de>`],
        ['To', BOT],
        ['Subject', '=?ISO-8859-1?Q?Gr=C3=BC=C3=9Fe?='],
        ['Message-ID', '<w@example.de>'],
        ['MIME-Version', '1.0'],
        ['Content-Type', 'text/plain; charset=iso-8859-1'],
        ['Content-Transfer-Encoding', '8bit'],
      ],
      'Schöne Grüße aus Köln – bis bald',
    );
    const m = await readMail(wrong, { ourAddress: BOT, maxTextChars: 20_000 });
    expect(m!.subject).toBe('Grüße');
    expect(m!.fromName).toBe('Jürgen');
    expect(m!.text).toBe('Subject: Grüße\n\nSchöne Grüße aus Köln – bis bald');
    const right = raw(
      [
        ['From', 'r@example.fr'],
        ['To', BOT],
        ['Subject', 'menu'],
        ['Message-ID', '<r@example.fr>'],
        ['Content-Type', 'text/plain; charset=iso-8859-1'],
        ['Content-Transfer-Encoding', '8bit'],
      ],
      Buffer.from('Un café, s’il vous plaît'.replace('’', "'"), 'latin1'),
    );
    expect((await readMail(right, { ourAddress: BOT, maxTextChars: 20_000 }))!.text).toBe("Subject: menu\n\nUn café, s'il vous plaît");
  });
});

describe('email: real-world mail through Dovecot, and catch-up across restarts', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let fake: FakeLlm;
  let mailbox: TestMailbox;
  let cfg: Config;
  let gw: Gateway | undefined;

  const start = async (c: Config = cfg) => {
    gw = await Gateway.start(c, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, EMAIL_IMAP_PASSWORD: dovecot.password });
    await eventually(async () => gw!.channels.find((x) => x.name === 'email')!.listener!.health().ok, 30_000);
  };
  const stop = async () => {
    await gw?.close();
    gw = undefined;
  };
  const repliesTo = (messageId: string): SentMail[] => sink.mails.filter((m) => m.inReplyTo === messageId);
  const replyTo = (messageId: string, timeoutMs = 30_000) => eventually(async () => repliesTo(messageId)[0], timeoutMs);
  const asked = () => fake.requests.map((r) => lastUserText(r.body));
  const dropped = async () => {
    const text = await (await fetch(`${gw!.url}/metrics`)).text();
    return Object.fromEntries(
      [...text.matchAll(/^switchboard_messages_dropped_total\{channel="email",reason="([^"]+)"\} (\d+)/gm)].map((m) => [m[1]!, Number(m[2])]),
    );
  };

  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-2' });
    sink = new SmtpSink();
    await sink.start();
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`You said: ${lastUserText(req.body)}`));
    mailbox = await TestMailbox.open(dovecot);
    cfg = testConfig(
      fake,
      {},
      {
        channels: {
          email: {
            address: BOT,
            name: 'Switchboard Bot',
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 4, minMs: 50, maxMs: 200 } },
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 3_000 },
            catchUp: { maxAgeMinutes: 120, maxMessages: 5 },
          },
        },
        access: { email: { policy: 'open' } },
      },
    );
    await start();
  }, 120_000);

  afterAll(async () => {
    await stop();
    await mailbox?.close();
    await fake?.close();
    await sink?.close();
    await dovecot?.stop();
  });

  it('hands the model only the new text of a Dutch and a Norwegian reply, and UTF-8 labelled ISO-8859-1 as written', async () => {
    const nl = newMessageId('example.nl');
    await mailbox.deliverRaw(
      raw(
        [
          ...personal(JAN, 'Re: afspraak', nl, [['In-Reply-To', '<earlier@example.test>']]),
          ['Content-Type', 'text/plain; charset="UTF-8"'],
          ['Content-Transfer-Encoding', 'quoted-printable'],
        ],
        [
          'Dinsdag om tien uur past prima.',
          '',
          'Op ma 1 dec. 2026 om 09:12 schreef Switchboard Bot <bot@example.test> het volgende:',
          '',
          'Wanneer schikt het u?',
          'Met vriendelijke groet,',
          'De assistent',
        ].join('\n'),
      ),
    );
    const no = newMessageId('example.no');
    await mailbox.deliverRaw(
      raw(
        [
          ...personal('ola@example.no', 'Re: tilbud', no, [['In-Reply-To', '<earlier2@example.test>']]),
          ['Content-Type', 'text/plain; charset=utf-8'],
          ['Content-Transfer-Encoding', '8bit'],
        ],
        'Ja, send det gjerne.\n\nDen 1. des. 2026 kl. 09:12 skrev Switchboard Bot <bot@example.test>:\n\nSkal jeg sende tilbudet?\n',
      ),
    );
    const de = newMessageId('example.de');
    await mailbox.deliverRaw(
      raw(
        [
          ...personal('juergen@example.de', '=?ISO-8859-1?Q?Gr=C3=BC=C3=9Fe?=', de),
          ['Content-Type', 'text/plain; charset=iso-8859-1'],
          ['Content-Transfer-Encoding', '8bit'],
        ],
        'Schöne Grüße aus Köln – wie geht’s?',
      ),
    );
    expect((await replyTo(nl)).text).toContain('You said: Dinsdag om tien uur past prima.');
    await replyTo(no);
    await replyTo(de);
    expect(asked()).toContain('Dinsdag om tien uur past prima.');
    expect(asked()).toContain('Ja, send det gjerne.');
    expect(asked()).toContain('Subject: Grüße\n\nSchöne Grüße aus Köln – wie geht’s?');
    for (const t of asked()) expect(t).not.toMatch(/Wanneer schikt|Skal jeg sende|Ã/);
  });

  it('does not answer auto-replies known only by their subject, or by Exchange’s X-Auto-Response-Suppress', async () => {
    const before = fake.requests.length;
    const robots: Array<[string, Array<[string, string]>]> = [
      ['Automatic reply: Re: afspraak', []],
      ['Autosvar: tilbud', []],
      ['Abwesenheitsnotiz: Grüße', []],
      ['Out of Office: your question', []],
      ['Automatisch antwoord: afspraak', []],
      ['=?UTF-8?Q?R=C3=A9ponse_automatique_:?= rendez-vous', []],
      ['Re: afspraak', [['X-Auto-Response-Suppress', 'All']]],
    ];
    const ids: string[] = [];
    for (const [subject, extra] of robots) {
      const id = newMessageId('example.nl');
      ids.push(id);
      await mailbox.deliverRaw(
        raw([...personal(JAN, subject, id, extra), ['Content-Type', 'text/plain; charset=utf-8']], 'Ik ben afwezig tot maandag. / I am away until Monday.'),
      );
    }
    const person = newMessageId('example.nl');
    await mailbox.deliverRaw(
      raw([...personal(JAN, 'Out of office plans for next week', person), ['Content-Type', 'text/plain; charset=utf-8']], 'Can you help me plan?'),
    );
    await replyTo(person);
    for (const id of ids) expect(repliesTo(id)).toEqual([]);
    expect(fake.requests.slice(before).map((r) => lastUserText(r.body))).toEqual(['Subject: Out of office plans for next week\n\nCan you help me plan?']);
    expect((await dropped()).automated).toBe(robots.length);
  });

  it('mail that came while the gateway was down: the recent answered once, the old one gets one offline reply; a second restart answers nothing again', async () => {
    await stop();
    const old = await mailbox.deliver(
      { from: JAN, subject: 'old question', text: 'sent three hours ago', headers: [authResults('example.nl', true)] },
      'INBOX',
      new Date(Date.now() - 180 * 60_000),
    );
    const older = await mailbox.deliver(
      { from: JAN, subject: 'older question', text: 'sent four hours ago', headers: [authResults('example.nl', true)] },
      'INBOX',
      new Date(Date.now() - 240 * 60_000),
    );
    const recent = await mailbox.deliver({ from: JAN, subject: 'recent question', text: 'sent a minute ago', headers: [authResults('example.nl', true)] });
    await start();
    expect((await replyTo(recent.messageId)).text).toContain('sent a minute ago');
    const sorry = await replyTo(old.messageId);
    expect(sorry.text).toContain('I was offline');
    expect(repliesTo(older.messageId)).toEqual([]); // one offline reply per sender: to the newest skipped mail
    expect(asked().join('\n')).not.toMatch(/hours ago/);
    expect(await dropped()).toMatchObject({ catch_up_too_old: 2 });
    const state = (await (await fetch(`${gw!.url}/v1/console/state`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } })).json()) as {
      dropped: Array<{ channel: string; reason: string; count: number }>;
    };
    expect(state.dropped).toEqual(expect.arrayContaining([{ channel: 'email', reason: 'catch_up_too_old', count: 2 }]));

    // Restart again: the UID cursor is past all of it. A new mail answered means the first sync is done.
    const sent = sink.mails.length;
    await stop();
    await start();
    const next = await mailbox.deliver({ from: JAN, subject: 'after the second restart', text: 'still here?', headers: [authResults('example.nl', true)] });
    await replyTo(next.messageId);
    expect(sink.mails.length).toBe(sent + 1);
    for (const m of [old, older, recent]) expect(repliesTo(m.messageId).length).toBeLessThanOrEqual(1);
  }, 180_000);
});
