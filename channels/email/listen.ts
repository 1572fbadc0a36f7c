import { ImapFlow, type SearchObject } from 'imapflow';
import type { Logger } from 'pino';
import { conversationKey } from '../../kernel/envelope.js';
import { ignoreError } from '../../kernel/errors.js';
import { type CatchUpSkip, type ChannelListener, type ListenContext, offlineReplyText, planCatchUp } from '../../src/channel/index.js';
import { composeReply } from './compose.js';
import type { EmailConfig } from './config.js';
import { emailBotNames, emailFacts, replyTarget, toInbound } from './inbound.js';
import { type InboundMail, readMail } from './parse.js';
import { Mailer } from './smtp.js';
import { type Cursor, CursorStore, PollerLease } from './state.js';
import { threadKey } from './thread.js';

type Status = 'starting' | 'connected' | 'standby' | 'disconnected' | 'closed';

/** A mail the catch-up policy skips (too old, too many from one sender in one sync), and whether it gets the offline reply. */
interface Skip {
  reason: CatchUpSkip;
  apologize: boolean;
}

const RESCAN_DAYS = 7;

/**
 * Watches one mailbox: IMAP IDLE (plus a periodic sync), a new ImapFlow after
 * every close with exponential backoff, UIDVALIDITY and the last handled UID
 * kept in the channel state, handled mail marked with our keyword (and \Seen,
 * or moved). Each mail is read, judged (auto-replies, bounces, lists and our
 * own mail are never answered) and handed to the ingress; approval answers and
 * refusals are answered here.
 */
export class EmailListener implements ChannelListener {
  private ctx?: ListenContext;
  private log!: Logger;
  private mailer?: Mailer;
  private lease?: PollerLease;
  private cursors?: CursorStore;
  private loop?: Promise<void>;
  private closed = false;
  private status: Status = 'starting';
  private lastError?: string;
  private client?: ImapFlow;
  private syncing: Promise<void> | null = null;
  private syncAgain = false;
  private wake?: () => void;
  private readonly notices = new Set<Promise<void>>();
  private readonly key: string;

  constructor(private readonly cfg: EmailConfig) {
    this.key = `${cfg.imap.user}@${cfg.imap.host}:${cfg.imap.port}/${cfg.imap.mailbox}`;
  }

  async start(ctx: ListenContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.mailer = new Mailer(this.cfg, ctx.log);
    this.lease = new PollerLease(ctx.leases, this.key, this.cfg.lease.ttlMs);
    this.cursors = new CursorStore(ctx.state, this.key);
    // Connecting happens in the background: a mail server that is down must not stop the gateway.
    this.loop = this.run();
  }

  health(): { ok: boolean; message?: string } {
    switch (this.status) {
      case 'connected':
        return { ok: true, message: `watching ${this.cfg.imap.mailbox}` };
      case 'standby':
        return { ok: true, message: 'standby: another process polls this mailbox' };
      case 'starting':
        return { ok: false, message: 'connecting to the IMAP server' };
      case 'closed':
        return { ok: false, message: 'closed' };
      default:
        return { ok: false, message: `IMAP disconnected${this.lastError ? `: ${this.lastError}` : ''}; reconnecting` };
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    const client = this.client;
    if (this.syncing) await Promise.race([this.syncing, this.sleepFor(10_000, false)]);
    if (client)
      await Promise.race([
        client.logout().catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'IMAP logout failed; closing the connection')),
        this.sleepFor(3_000, false),
      ]);
    client?.close();
    await this.loop?.catch(ignoreError('the loop logs its own failures; closing only waits for it'));
    await Promise.allSettled([...this.notices]);
    await this.lease?.release().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not release the mailbox lease; it expires'));
    this.mailer?.close();
    this.status = 'closed';
  }

  /** Sleeps ms, or until close() when wakeable. */
  private sleepFor(ms: number, wakeable = true): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      if (wakeable) this.wake = done;
    });
  }

  private async run(): Promise<void> {
    const { reconnect } = this.cfg;
    let failures = 0;
    while (!this.closed) {
      let held = false;
      try {
        held = await this.lease!.acquire();
      } catch (err) {
        this.lastError = `lease: ${(err as Error).message}`;
      }
      if (this.closed) break;
      if (!held) {
        this.status = 'standby';
        failures = 0;
        await this.sleepFor(Math.max(250, Math.floor(this.cfg.lease.ttlMs / 3)));
        continue;
      }
      if (await this.session()) failures = 0;
      if (this.closed) break;
      failures++;
      const delay = Math.min(reconnect.maxMs, reconnect.minMs * 2 ** Math.min(failures - 1, 20)) * (0.8 + Math.random() * 0.4);
      this.status = 'disconnected';
      this.log.warn({ err: this.lastError, delayMs: Math.round(delay) }, 'IMAP connection closed; reconnecting');
      await this.sleepFor(delay);
    }
  }

  /**
   * One connection, from connect to close (true if it got as far as the mailbox).
   * A new ImapFlow each time: an instance cannot connect twice.
   */
  private async session(): Promise<boolean> {
    const { imap } = this.cfg;
    const client = new ImapFlow({
      host: imap.host,
      port: imap.port,
      secure: imap.secure,
      auth: { user: imap.user, pass: this.cfg.secrets.imapPassword },
      tls: { rejectUnauthorized: imap.rejectUnauthorized },
      // imapflow's own protocol log only at trace level (it is pino-compatible).
      logger: this.log.isLevelEnabled('trace') ? this.log.child({ imap: true }) : false,
      connectionTimeout: 30_000,
      autoIdleDelay: this.cfg.idleDelayMs,
      maxIdleTime: 5 * 60_000,
      missingIdleCommand: 'NOOP',
    });
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.on('error', (err: Error) => {
      this.lastError = err.message;
      this.log.warn({ err: err.message }, 'IMAP error');
    });
    const timers: NodeJS.Timeout[] = [];
    let opened = false;
    // Keep the lease while connecting too; losing it ends the session.
    timers.push(
      setInterval(
        () => {
          this.lease!.renew().then(
            (ok) => {
              if (!ok) {
                this.log.warn('another process took over this mailbox; standing by');
                client.close();
              }
            },
            (err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not renew the mailbox lease'),
          );
        },
        Math.max(100, Math.floor(this.cfg.lease.ttlMs / 3)),
      ),
    );
    try {
      await client.connect();
      await client.mailboxOpen(imap.mailbox);
      if (this.cfg.processed.action === 'move') {
        await client.mailboxCreate(this.cfg.processed.folder).catch(() => {
          /* exists already */
        });
      }
      opened = true;
      if (this.closed) {
        await client.logout().catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'IMAP logout failed'));
        return opened;
      }
      this.client = client;
      this.status = 'connected';
      this.lastError = undefined;
      this.log.info({ mailbox: imap.mailbox, idle: client.capabilities.has('IDLE') }, 'email listener connected');
      client.on('exists', () => this.requestSync(client));
      timers.push(setInterval(() => this.requestSync(client), this.cfg.syncIntervalMs));
      this.requestSync(client);
      await closed;
    } catch (err) {
      this.lastError = (err as Error).message;
      client.close();
    } finally {
      for (const t of timers) clearInterval(t);
      if (this.client === client) this.client = undefined;
      if (this.syncing) await this.syncing.catch(ignoreError('a failed sync is logged where it runs'));
    }
    return opened;
  }

  /** Runs a sync now, or right after the running one. */
  private requestSync(client: ImapFlow): void {
    if (this.closed) return;
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        try {
          await this.sync(client);
        } catch (err) {
          this.log.warn({ err: (err as Error).message }, 'mailbox sync failed; trying again shortly');
          if (client.usable) setTimeout(() => client.usable && this.requestSync(client), Math.min(this.cfg.syncIntervalMs, 5_000)).unref();
        }
      } while (this.syncAgain && !this.closed && client.usable);
    })().finally(() => {
      this.syncing = null;
    });
  }

  /** Handles every mail after the cursor, in UID order; the cursor only moves past mail that is handled. */
  private async sync(client: ImapFlow): Promise<void> {
    const mb = client.mailbox;
    if (!mb || this.closed) return;
    const uidValidity = String(mb.uidValidity);
    let cursor = await this.cursors!.get();
    if (!cursor) {
      cursor = { uidValidity, lastUid: this.cfg.backfill ? 0 : Math.max(0, Number(mb.uidNext) - 1) };
      await this.cursors!.set(cursor);
      this.log.info({ uidValidity, lastUid: cursor.lastUid }, 'first start on this mailbox');
    } else if (cursor.uidValidity !== uidValidity) {
      // UIDs were renumbered: look again at recent mail without our keyword; the inbox's unique Message-ID drops what was taken already.
      cursor = { uidValidity, lastUid: 0, since: new Date(Date.now() - RESCAN_DAYS * 86_400_000).toISOString() };
      await this.cursors!.set(cursor);
      this.log.warn({ uidValidity }, 'UIDVALIDITY changed: rescanning recent mail');
    }
    const query: SearchObject = { uid: `${cursor.lastUid + 1}:*` };
    if (cursor.since) query.since = new Date(cursor.since);
    const found = (await client.search(query, { uid: true })) || [];
    const after = cursor.lastUid;
    const uids = found.filter((u) => u > after).sort((a, b) => a - b);
    // A rescan after a UIDVALIDITY change looks again at mail that may be answered already: no skipping there.
    const skips = cursor.since ? new Map<number, Skip>() : await this.planBatch(client, uids);
    for (const uid of uids) {
      if (this.closed || !client.usable) return;
      await this.handleUid(client, uid, skips.get(uid));
      cursor = { ...cursor, lastUid: uid };
      await this.cursors!.set(cursor);
    }
  }

  /** channels.email.catchUp over the mail found in one sync: by when the server received it, per sender. */
  private async planBatch(client: ImapFlow, uids: number[]): Promise<Map<number, Skip>> {
    const out = new Map<number, Skip>();
    if (!uids.length) return out;
    const items: Array<{ uid: number; at: Date; place: string }> = [];
    for await (const m of client.fetch(uids.join(','), { uid: true, internalDate: true, envelope: true }, { uid: true })) {
      const at = m.internalDate ? new Date(m.internalDate) : new Date();
      items.push({ uid: m.uid, at: Number.isNaN(at.getTime()) ? new Date() : at, place: m.envelope?.from?.[0]?.address?.toLowerCase() ?? '' });
    }
    const plan = planCatchUp(items, this.cfg.catchUp, new Date());
    const sorry = new Set(plan.apologize.map((a) => a.uid));
    for (const s of plan.skipped) out.set(s.message.uid, { reason: s.reason, apologize: sorry.has(s.message.uid) });
    if (plan.skipped.length) this.log.info({ found: items.length, skipped: plan.skipped.length }, 'email catch-up: mail skipped by channels.email.catchUp');
    return out;
  }

  private async handleUid(client: ImapFlow, uid: number, skip?: Skip): Promise<void> {
    const { processed, maxMessageBytes } = this.cfg;
    const head = await client.fetchOne(String(uid), { uid: true, flags: true, size: true }, { uid: true });
    if (!head) return; // expunged meanwhile
    if (head.flags?.has(processed.keyword)) return; // handled before (by us or another process)
    const msg = await client.fetchOne(
      String(uid),
      { uid: true, internalDate: true, source: (head.size ?? 0) > maxMessageBytes ? { maxLength: maxMessageBytes } : true },
      { uid: true },
    );
    if (!msg || !msg.source) return;
    let mail: InboundMail | null = null;
    try {
      mail = await readMail(msg.source, {
        ourAddress: this.cfg.address,
        authServId: this.cfg.authServId,
        maxTextChars: this.cfg.maxTextChars,
        ...(this.ctx?.maxImageBytes ? { maxImageBytes: this.ctx.maxImageBytes } : {}),
      });
    } catch (err) {
      this.log.warn({ uid, err: (err as Error).message }, 'unreadable mail skipped');
    }
    if (mail) await this.deliver(mail, msg.internalDate ? new Date(msg.internalDate) : undefined, uid, skip);
    else this.ctx!.dropped('unreadable');
    await this.markProcessed(client, uid);
  }

  /** Hands one mail to the ingress (throws if the ingress fails: the mail is tried again). */
  private async deliver(mail: InboundMail, receivedAt: Date | undefined, uid: number, skip?: Skip): Promise<void> {
    if (mail.automated) {
      this.log.info({ uid, from: mail.from, reason: mail.automated }, 'automated mail not answered');
      this.ctx!.dropped('automated');
      return;
    }
    if (!mail.text.trim()) {
      this.log.info({ uid, from: mail.from }, 'mail without new text not answered');
      this.ctx!.dropped('empty');
      return;
    }
    const verified = !this.cfg.requireAuthenticatedSender || mail.authenticated;
    if (!verified && !this.cfg.allowUnauthenticatedSenders) {
      // Nothing is enqueued and nothing is sent: a reply to a forged From would be backscatter.
      this.log.info({ uid, from: mail.from }, 'sender not authenticated by the receiving server: not answered (channels.email.allowUnauthenticatedSenders)');
      this.ctx!.dropped('unauthenticated');
      return;
    }
    if (skip) {
      this.log.info({ uid, from: mail.from, reason: skip.reason }, 'mail skipped by channels.email.catchUp');
      this.ctx!.dropped(skip.reason);
      const sorry = offlineReplyText(this.cfg.catchUp);
      // Never to an unverified From (backscatter).
      if (skip.apologize && sorry && verified) this.notify(mail, sorry);
      return;
    }
    if (!verified) this.log.info({ uid, from: mail.from }, 'sender not authenticated by the receiving server: treated as unverified');
    // Human takeover: an authenticated operator's mail on a user's thread belongs to the user's conversation.
    const onThread = verified ? await this.operatorThread(mail) : null;
    // A group thread: answered only when addressed to us (asked before anything is sent or a model called).
    const facts = emailFacts(mail, this.cfg.address, emailBotNames(this.cfg.groups, this.cfg.name, this.cfg.address));
    if (!facts.isDirect && !onThread) {
      const decision = await this.ctx!.shouldAnswer({ room: threadKey(mail), facts, policy: this.cfg.groups, text: mail.text, messageId: mail.externalId });
      if (!decision.answer) {
        this.log.info({ uid, from: mail.from, reason: decision.why }, 'group mail not addressed to us: not answered');
        return;
      }
    }
    const msg = toInbound(mail, {
      ourAddress: this.cfg.address,
      requireAuthenticatedSender: this.cfg.requireAuthenticatedSender,
      ...(receivedAt ? { receivedAt } : {}),
    });
    if (onThread) msg.conversationKey = onThread.key;
    else if (verified) await this.rememberThread(mail, msg.conversationKey);
    // The operator's reply takes the conversation over; the user gets it from us unless they were a recipient of it.
    const outcome = await this.ctx!.receive(msg, onThread ? { takesOver: true, shownToUser: onThread.shown } : {});
    // An empty reply: nothing to tell (a message passed on to the operator who has this conversation).
    if (outcome.kind === 'answered') {
      // A refusal (a takeover by a non-operator) is not mailed to a From nobody vouched for: it may be forged (backscatter).
      if (outcome.reply && (outcome.ok || verified)) this.notify(mail, outcome.reply);
      if (outcome.handoff && !outcome.replayed) await this.followHandoff(mail, msg.conversationKey, outcome.handoff, onThread !== null);
    }
    // Accepted, but its conversation waits for an approval: said at once, the answer follows later.
    else if (outcome.kind === 'accepted' && outcome.notice && !outcome.replayed) this.notify(mail, outcome.notice);
    // No refusal notice to a From nobody vouched for: it may be forged (backscatter).
    else if (outcome.kind === 'refused' && outcome.reply && verified) this.notify(mail, outcome.reply);
  }

  /**
   * The user's conversation an operator's mail (From an approvals.operators.email address the
   * receiving server vouched for) answers on its thread: a recipient of it whose conversation has
   * this thread (the user saw the mail: shown), else the thread's last user (rememberThread; the
   * user did not see it, so it is mailed to them). Null: not an operator, or no user's thread.
   */
  private async operatorThread(mail: InboundMail): Promise<{ key: string; shown: boolean } | null> {
    const ctx = this.ctx!;
    if (!ctx.handoffOf || !ctx.isOperator({ channel: 'email', id: mail.from })) return null;
    const thread = threadKey(mail);
    const keyOf = (address: string) => conversationKey({ channel: 'email', workspace: this.cfg.address, chat: address, thread });
    for (const a of new Set([...mail.to, ...mail.cc])) {
      if (a === this.cfg.address || a === mail.from) continue;
      if (await ctx.conversationExists(keyOf(a))) return { key: keyOf(a), shown: true };
    }
    const last = await ctx.state.get<string>(CHANNEL_STATE, threadStateKey(this.cfg.address, thread));
    if (typeof last === 'string' && last !== keyOf(mail.from) && (await ctx.conversationExists(last))) return { key: last, shown: false };
    return null;
  }

  /**
   * The email operator who holds a conversation sees its user's mail in the thread: the operator's
   * own mail on it names them (channel state `thread-operator:<conversation key>`, dropped at
   * handback), and a user's mail they were no recipient of is forwarded to them in the thread
   * (their reply to it comes back to this conversation by the thread).
   */
  private async followHandoff(mail: InboundMail, key: string, h: { state: string; operator?: true }, byOperator: boolean): Promise<void> {
    const ctx = this.ctx!;
    const stateKey = `thread-operator:${key}`;
    if (byOperator && h.operator) {
      if (h.state === 'returned') await ctx.state.delete(CHANNEL_STATE, stateKey);
      else await ctx.state.set(CHANNEL_STATE, stateKey, mail.from);
      return;
    }
    if (h.operator || h.state !== 'taken') return;
    const op = await ctx.state.get<string>(CHANNEL_STATE, stateKey);
    if (typeof op !== 'string' || op === mail.from || mail.to.includes(op) || mail.cc.includes(op)) return;
    const mailer = this.mailer!;
    const text = `${mail.fromName ? `${mail.fromName} <${mail.from}>` : mail.from} wrote (you have this conversation; reply to answer, "handback" to return it to the agent):\n\n${mail.text}`;
    const p = mailer
      .send(
        composeReply({ from: mailer.from, parent: { ...replyTarget(mail), to: op }, markdown: text, messageId: mailer.newMessageId(), tag: 'handoff-relay' }),
      )
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, "could not forward the user's mail to the operator who has the conversation"))
      .finally(() => this.notices.delete(p));
    this.notices.add(p);
  }

  /** The thread's last (authenticated, non-operator) sender's conversation: where an operator's reply on the thread goes. */
  private async rememberThread(mail: InboundMail, key: string): Promise<void> {
    const ctx = this.ctx!;
    if (!ctx.handoffOf || ctx.isOperator({ channel: 'email', id: mail.from })) return;
    await ctx.state.set(CHANNEL_STATE, threadStateKey(this.cfg.address, threadKey(mail)), key);
  }

  private async markProcessed(client: ImapFlow, uid: number): Promise<void> {
    const { processed } = this.cfg;
    await client.messageFlagsAdd(String(uid), [processed.keyword, ...(processed.markSeen ? ['\\Seen'] : [])], { uid: true });
    if (processed.action === 'move') {
      const moved = await client.messageMove(String(uid), processed.folder, { uid: true });
      if (!moved) this.log.warn({ uid, folder: processed.folder }, 'could not move processed mail');
    }
  }

  /** A short threaded reply (approval outcome, access notice), sent in the background with retries. */
  private notify(mail: InboundMail, text: string): void {
    const mailer = this.mailer!;
    const p = mailer
      .send(composeReply({ from: mailer.from, parent: replyTarget(mail), markdown: text, messageId: mailer.newMessageId(), tag: 'notice' }))
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message, to: mail.replyAddress }, 'could not send a notice mail'))
      .finally(() => this.notices.delete(p));
    this.notices.add(p);
  }
}

export type { Cursor };

const CHANNEL_STATE = 'email';

/** Channel state: the conversation of a thread's last user, per mailbox (for an operator's reply on it). */
function threadStateKey(ourAddress: string, thread: string): string {
  return `thread-user:${ourAddress}:${thread}`;
}
