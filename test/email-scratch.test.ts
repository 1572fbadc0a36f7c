import { it } from 'vitest';
import { ImapFlow } from 'imapflow';
import { startDovecot } from './support/dovecot.js';
it('scratch', async () => {
const d = await startDovecot();
console.log('started', d.port);
try {
const c = new ImapFlow({ host: d.host, port: d.port, secure: false, auth: { user: d.user, pass: d.password }, logger: false });
await c.connect();
const mb = await c.mailboxOpen('INBOX');
console.log(mb.uidValidity, mb.uidNext, [...(mb.permanentFlags ?? [])], c.enabled, c.capabilities.has('IDLE'));
await c.append('INBOX', 'From: a@b.c\r\nSubject: hi\r\nMessage-ID: <x@y>\r\n\r\nhello\r\n', []);
for await (const m of c.fetch('1:*', { uid: true, flags: true, envelope: true })) console.log(m.uid, m.flags, m.envelope?.subject);
await c.messageFlagsAdd('1', ['$SwitchboardSeen'], { uid: true });
const r = await c.search({ unKeyword: '$SwitchboardSeen' }, { uid: true });
console.log('unkw', r);
await c.logout();
} finally {
console.log(d.log().slice(-3000));
await d.stop();
}
});
