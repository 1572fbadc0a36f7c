import pg from 'pg';

/**
 * A load of chat messages over the HTTP API, and the invariants checked after:
 * nothing lost, nothing answered twice, per-conversation order kept. Shared by
 * the fault tests and the chaos benchmark.
 */
export interface LoadOptions {
  urls: string[]; // ingress URLs, used round-robin
  apiKey: string;
  conversations: number;
  messagesPerConversation: number;
  /** Requests in flight at once (one per conversation at a time, so each conversation stays ordered). */
  concurrency: number;
  prefix: string;
  /** Gives up on a request after this long (the message is still durable; the check reads the store). */
  requestTimeoutMs?: number;
}

export interface LoadResult {
  sent: number;
  answeredOk: number;
  failedRequests: number;
  latenciesMs: number[];
  wallMs: number;
}

/** Sends the messages of each conversation in order (the next after the previous was answered). */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(o.concurrency, o.conversations) }, async () => {
      for (;;) {
        const c = next++;
        if (c >= o.conversations) return;
        for (let m = 0; m < o.messagesPerConversation; m++) {
          const text = `${o.prefix}-c${c}-m${m}`;
          const started = Date.now();
          // Retries carry the same Idempotency-Key: a message is accepted once however often it is sent.
          for (let attempt = 0; ; attempt++) {
            const url = o.urls[(c + m + attempt) % o.urls.length]!;
            try {
              const res = await fetch(`${url}/v1/chat/completions`, {
                method: 'POST',
                headers: {
                  authorization: `Bearer ${o.apiKey}`,
                  'content-type': 'application/json',
                  'x-switchboard-conversation': `${o.prefix}-c${c}`,
                  'idempotency-key': text,
                },
                body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: text }] }),
                signal: AbortSignal.timeout(o.requestTimeoutMs ?? 60_000),
              });
              const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
              // A 5xx (a backing service restarting) is retried with the same key, like a careful client.
              if (res.status >= 500 && attempt < 8) {
                await new Promise((r) => setTimeout(r, 500));
                continue;
              }
              if (res.ok && body.choices?.[0]?.message.content === `echo: ${text}`) ok++;
              else failed++;
              break;
            } catch {
              if (attempt >= 5) {
                failed++;
                break;
              }
              await new Promise((r) => setTimeout(r, 500));
            }
          }
          latencies.push(Date.now() - started);
        }
      }
    }),
  );
  return { sent: o.conversations * o.messagesPerConversation, answeredOk: ok, failedRequests: failed, latenciesMs: latencies, wallMs: Date.now() - t0 };
}

export interface Invariants {
  inboxRows: number;
  lost: number; // accepted but never answered
  duplicated: number; // answered more than once, or run by more than one finished turn
  orderViolations: number;
}

/** Reads the store: every inbox row consumed by exactly one finished turn with exactly one reply, in order. */
export async function checkInvariants(databaseUrl: string, prefix: string): Promise<Invariants> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const rows = (
      await db.query<{ id: string; conversation_id: string; text: string; consumed: boolean; seq: number | null; status: string | null; replies: number }>(
        `select i.id, i.conversation_id, i.text, i.consumed_at is not null as consumed, t.seq, t.status,
                (select count(*)::int from messages m where m.turn_id = i.turn_id and m.role = 'assistant') as replies
         from inbox i left join turns t on t.id = i.turn_id
         where i.text like $1 order by i.conversation_id, i.id`,
        [`${prefix}-%`],
      )
    ).rows;
    let lost = 0;
    let duplicated = 0;
    let order = 0;
    const byConv = new Map<string, typeof rows>();
    for (const r of rows) {
      if (!r.consumed || r.status !== 'done' || r.replies === 0) lost++;
      if (r.replies > 1) duplicated++;
      byConv.set(r.conversation_id, [...(byConv.get(r.conversation_id) ?? []), r]);
    }
    // The same text twice in the inbox would be a duplicate acceptance.
    const texts = new Set<string>();
    for (const r of rows) {
      if (texts.has(r.text)) duplicated++;
      texts.add(r.text);
    }
    for (const list of byConv.values()) {
      for (let i = 1; i < list.length; i++) {
        const a = list[i - 1]!;
        const b = list[i]!;
        const ma = Number(/-m(\d+)$/.exec(a.text)?.[1]);
        const mb = Number(/-m(\d+)$/.exec(b.text)?.[1]);
        if (mb < ma || (a.seq !== null && b.seq !== null && b.seq < a.seq)) order++;
      }
    }
    return { inboxRows: rows.length, lost, duplicated, orderViolations: order };
  } finally {
    await db.end();
  }
}

export function pct(xs: number[], p: number): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
