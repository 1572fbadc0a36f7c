import pg from 'pg';

/** One conversation's kind: what its messages make the model do (bench/chaos/model.ts). */
export type Kind = 'plain' | 'tool' | 'approval';

export interface DriveOptions {
  urls: string[];
  apiKey: string;
  databaseUrl: string;
  prefix: string;
  conversations: number;
  messages: number;
  concurrency: number;
  /** Share of conversations whose messages are streamed (SSE) rather than answered as JSON. */
  streamShare: number;
  kindOf(c: number): Kind;
  /** How long one message may take to be answered (approval waits included) before it counts as wedged. */
  answerTimeoutMs: number;
}

export interface StreamRecord {
  text: string;
  /** What the client was shown, in order: the content deltas of every attempt it made (the last one counts). */
  shown: string;
}

export interface DriveResult {
  sent: number;
  /** Messages not answered within answerTimeoutMs (the conversation is wedged behind them). */
  unanswered: string[];
  streams: StreamRecord[];
  latenciesMs: number[];
  wallMs: number;
  retries: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The SSE content of one streamed request (the concatenated delta.content of its chunks). */
async function readStream(res: Response): Promise<string> {
  let shown = '';
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        try {
          const d = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }> };
          shown += d.choices?.[0]?.delta?.content ?? '';
        } catch {
          /* a comment or keep-alive */
        }
      }
    }
  }
  return shown;
}

/**
 * Sends each conversation's messages in order, the next only once the store shows the previous one
 * answered (an approval turn is answered after the operator loop approves it). Requests are retried
 * with the same Idempotency-Key on 5xx and network errors, as a careful client does; a streamed
 * retry shows what that client would see.
 */
export async function drive(o: DriveOptions): Promise<DriveResult> {
  const db = new pg.Pool({ connectionString: o.databaseUrl, max: 4, application_name: 'chaos-bench' });
  db.on('error', () => undefined); // the run terminates Postgres connections on purpose; the next query reconnects
  const unanswered: string[] = [];
  const streams: StreamRecord[] = [];
  const latencies: number[] = [];
  let retries = 0;
  let next = 0;
  const t0 = Date.now();
  const answered = async (text: string): Promise<boolean> => {
    const r = await db
      .query<{ done: boolean }>(
        `select (i.consumed_at is not null and t.status = 'done') as done from inbox i left join turns t on t.id = i.turn_id where i.text = $1`,
        [text],
      )
      .catch(() => ({ rows: [] as Array<{ done: boolean }> }));
    return r.rows[0]?.done === true;
  };
  await Promise.all(
    Array.from({ length: Math.min(o.concurrency, o.conversations) }, async () => {
      for (;;) {
        const c = next++;
        if (c >= o.conversations) return;
        const kind = o.kindOf(c);
        const tag = kind === 'approval' ? 'a' : kind === 'tool' ? 't' : 'p';
        const stream = (c * 7919) % 100 < o.streamShare * 100 && kind !== 'approval';
        for (let m = 0; m < o.messages; m++) {
          const text = `${o.prefix}-${tag}${c}-m${m}`;
          const started = Date.now();
          let shown = '';
          for (let attempt = 0; attempt < 20; attempt++) {
            const url = o.urls[(c + m + attempt) % o.urls.length]!;
            try {
              const res = await fetch(`${url}/v1/chat/completions`, {
                method: 'POST',
                headers: {
                  authorization: `Bearer ${o.apiKey}`,
                  'content-type': 'application/json',
                  'x-switchboard-conversation': `${o.prefix}-${tag}${c}`,
                  'idempotency-key': text,
                },
                body: JSON.stringify({ model: 'default', stream, messages: [{ role: 'user', content: text }] }),
                signal: AbortSignal.timeout(60_000),
              });
              if (res.status >= 500) {
                await res.body?.cancel();
                retries++;
                await sleep(300 + Math.random() * 400);
                continue;
              }
              if (stream) shown = await readStream(res);
              else await res.body?.cancel();
              break;
            } catch {
              retries++;
              await sleep(300 + Math.random() * 400);
            }
          }
          const deadline = Date.now() + o.answerTimeoutMs;
          while (!(await answered(text)) && Date.now() < deadline) await sleep(200);
          if (!(await answered(text))) {
            unanswered.push(text);
            break; // the conversation is wedged: its next messages would only wait behind this one
          }
          latencies.push(Date.now() - started);
          if (stream) streams.push({ text, shown });
        }
      }
    }),
  );
  await db.end();
  return { sent: o.conversations * o.messages, unanswered, streams, latenciesMs: latencies, wallMs: Date.now() - t0, retries };
}
