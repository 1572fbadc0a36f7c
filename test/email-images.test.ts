/**
 * Images in by email: an image MIME part, attached or inline (a cid: picture), reaches a model that
 * takes images as an image part (typed by its bytes); a disguised or oversized part, or a model
 * without image input, gets a note instead. Real IMAP (Dovecot), as the other email tests; the
 * parsing of the parts is also checked without one.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { readMail } from '../channels/email/parse.js';
import type { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { authResults, type MailSpec, rawMail, TestMailbox } from './fakes/email-mailbox.js';
import { SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, testConfig } from './support/gateway.js';
import { allText, BIG_PNG, imageParts, PNG, PNG_URL } from './support/images.js';

const BOT = 'bot@example.test';
const ALICE = 'alice@example.com';

interface Side {
  dovecot: Dovecot;
  mailbox: TestMailbox;
  gw: Gateway;
}

describe('images in by email', () => {
  let sink: SmtpSink;
  let llm: FakeLlm;
  let vision: Side;
  let plain: Side;

  const side = async (input?: string[]): Promise<Side> => {
    const dovecot = await startDovecot({ user: BOT, password: 'imap-secret-1' });
    const cfg: Config = testConfig(
      llm,
      {},
      {
        ...(input ? { provider: { input } } : {}),
        attachments: { maxImageBytes: 4096 },
        channels: {
          email: {
            address: BOT,
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false },
            requireAuthenticatedSender: true,
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
          },
        },
        access: { email: { policy: 'open' } },
      },
    );
    const gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), {
      ...process.env,
      EMAIL_IMAP_PASSWORD: dovecot.password,
    });
    await eventually(async () => gw.channels.find((c) => c.name === 'email')!.listener!.health().ok, 15_000);
    return { dovecot, mailbox: await TestMailbox.open(dovecot), gw };
  };

  beforeAll(async () => {
    sink = new SmtpSink();
    await sink.start();
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`seen: ${lastUserText(req.body).split('\n')[0]}`));
    vision = await side(['text', 'image']);
    plain = await side();
  }, 180_000);
  afterAll(async () => {
    for (const s of [vision, plain]) {
      await s?.gw.close();
      await s?.mailbox.close();
      await s?.dovecot.stop();
    }
    await llm?.close();
    await sink?.close();
  });

  const send = async (s: Side, text: string, parts: NonNullable<MailSpec['parts']>): Promise<FakeRequest> => {
    const { messageId } = await s.mailbox.deliver({
      from: ALICE,
      subject: `Re: ${text}`,
      inReplyTo: '<x@example.com>',
      text,
      parts,
      headers: [authResults('example.com', true)],
    });
    await eventually(async () => sink.mails.find((m) => m.inReplyTo === messageId), 20_000);
    return llm.requests.find((r) => lastUserText(r.body).startsWith(text))!;
  };

  it('an attached image and an inline picture reach the model as image parts', async () => {
    const req = await send(vision, 'two pictures', [
      { contentType: 'image/png', filename: 'cat.png', bytes: PNG },
      { contentType: 'image/png', inline: true, bytes: PNG },
    ]);
    expect(imageParts(req)).toEqual([PNG_URL, PNG_URL]);
  });

  it('a non-image part labelled image/png is refused with a note', async () => {
    const req = await send(vision, 'disguised', [{ contentType: 'image/png', filename: 'evil.png', bytes: Buffer.from('<html><script>x</script></html>') }]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('[attachment evil.png (image/png): not shown: the file is not a PNG, JPEG, GIF or WebP image]');
  });

  it('an image over attachments.maxImageBytes gets a note', async () => {
    const req = await send(vision, 'too big', [{ contentType: 'image/png', filename: 'big.png', bytes: BIG_PNG }]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('big.png (image/png): image not shown: larger than the 4096-byte limit');
  });

  it('a model without image input gets a note instead of the image', async () => {
    const req = await send(plain, 'text only', [{ contentType: 'image/png', filename: 'cat.png', bytes: PNG }]);
    expect(imageParts(req)).toEqual([]);
    expect(allText(req)).toContain('image omitted: model does not support images');
  });
});

describe('email image parts as the channel reads them (no IMAP server needed)', () => {
  const read = (parts: NonNullable<MailSpec['parts']>) =>
    readMail(Buffer.from(rawMail({ from: ALICE, subject: 'pics', text: 'look', parts }).raw), { ourAddress: BOT, maxTextChars: 20_000, maxImageBytes: 4096 });

  it('attached and inline image parts keep their bytes, typed by them; a disguised or oversized part is named with a note; other files are named', async () => {
    const GIF = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
    const mail = (await read([
      { contentType: 'image/png', filename: 'cat.png', bytes: PNG },
      { contentType: 'image/png', inline: true, bytes: GIF },
      { contentType: 'image/png', filename: 'evil.png', bytes: Buffer.from('<svg onload=alert(1)>') },
      { contentType: 'image/png', filename: 'big.png', bytes: BIG_PNG },
      { contentType: 'application/pdf', filename: 'report.pdf', bytes: Buffer.from('%PDF-1.7') },
    ]))!;
    expect(mail.attachments).toEqual([
      { name: 'cat.png', contentType: 'image/png', size: PNG.length, data: PNG.toString('base64') },
      { name: 'inline-image-1', contentType: 'image/gif', size: GIF.length, data: GIF.toString('base64') },
      { name: 'evil.png', contentType: 'image/png', size: 21, note: 'not shown: the file is not a PNG, JPEG, GIF or WebP image' },
      { name: 'big.png', contentType: 'image/png', size: BIG_PNG.length, note: 'image not shown: larger than the 4096-byte limit' },
      { name: 'report.pdf', contentType: 'application/pdf', size: 8 },
    ]);
  });
});
