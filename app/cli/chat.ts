import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

export const CHAT_USAGE = `usage: switchboard chat [--conversation ID] [--model AGENT]

Talks to a running gateway: SWITCHBOARD_URL (default http://127.0.0.1:8787) with a user key in
SWITCHBOARD_API_KEY. With SWITCHBOARD_OPERATOR_KEY set, approval requests are answered inline.
Type /quit to leave; /new, /status, /stop and /mode go to the gateway.`;

interface Io {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

/** `switchboard chat`: a terminal chat with streamed output, tool activity and inline approvals. */
export async function runChat(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  io: Io = { input: process.stdin, output: process.stdout },
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { conversation: { type: 'string' }, model: { type: 'string' } } });
  } catch (e) {
    io.output.write(`switchboard chat: ${(e as Error).message}\n${CHAT_USAGE}\n`);
    return 2;
  }
  const base = (env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const key = env.SWITCHBOARD_API_KEY;
  if (!key) {
    io.output.write("switchboard chat: set SWITCHBOARD_API_KEY to one of the gateway's SWITCHBOARD_API_KEYS\n");
    return 2;
  }
  const operatorKey = env.SWITCHBOARD_OPERATOR_KEY;
  const conversation = parsed.values.conversation ?? `chat-${randomBytes(4).toString('hex')}`;
  const model = parsed.values.model ?? 'default';
  const say = (s: string) => io.output.write(s);
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  // Lines typed while an answer is still streaming are kept, not lost.
  const lines = rl[Symbol.asyncIterator]();
  const ask = async (): Promise<string | null> => {
    const r = await lines.next().catch(() => ({ done: true, value: undefined }));
    return r.done ? null : (r.value as string);
  };
  let lastMessageId = await latestMessageId(base, key, conversation);
  say(`conversation ${conversation} at ${base} — /quit to leave\n`);

  for (;;) {
    say('you> ');
    const line = await ask();
    if (line === null) break;
    const text = line.trim();
    if (!text) continue;
    if (text === '/quit' || text === '/exit') break;
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-switchboard-conversation': conversation },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: text }] }),
    }).catch((e: unknown) => e as Error);
    if (res instanceof Error || !res.ok) {
      say(`[error] ${res instanceof Error ? `cannot reach ${base}: ${res.message}` : await errorText(res)}\n`);
      continue;
    }
    say('agent> ');
    let approval: { code: string; tool: string; tier: string; expiresAt: string; alwaysPermitted?: boolean } | undefined;
    for await (const chunk of sse(res)) {
      const sb = chunk.switchboard as Record<string, unknown> | undefined;
      const delta = (chunk.choices as Array<{ delta?: { content?: string } }> | undefined)?.[0]?.delta?.content;
      // A chunk with an approval card carries its text fallback: with an operator key the card is an inline prompt instead.
      if (delta && !(sb?.approval && operatorKey)) say(delta);
      if (sb?.tool) {
        const t = sb.tool as { name: string; status: string };
        // "[tool shell_exec waiting for approval (code K7Q4P)]" for a parked call, never "failed".
        say(`\n  [tool ${t.name} ${t.status}]\n`);
      }
      if (sb?.reset) say('\n  [the answer restarts]\n');
      if (sb?.notice) say(`\n  [${String(sb.notice)}]\n`);
      if (sb?.approval) approval = sb.approval as typeof approval;
      if (chunk.error) say(`\n[error] ${(chunk.error as { message: string }).message}`);
    }
    say('\n');
    lastMessageId = await latestMessageId(base, key, conversation);
    // Approvals inline: answer, then show what the resumed turn said.
    while (approval && operatorKey) {
      // [a]lways only for a call that can become an exact rule (in this conversation).
      const always = approval.alwaysPermitted === true;
      say(`approval ${approval.code} (${approval.tier}) for ${approval.tool}: [y]es / [n]o${always ? ' / [a]lways' : ''} / [s]kip? `);
      const a = ((await ask()) ?? 's').trim().toLowerCase();
      const decision = a.startsWith('y') ? 'approve' : always && a.startsWith('a') ? 'always' : a.startsWith('n') ? 'deny' : null;
      if (!decision) break;
      const r = await fetch(`${base}/v1/approvals/${approval.code}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision }),
      });
      const body = (await r.json().catch(() => ({}))) as { message?: string; error?: { message: string } };
      say(`  [${body.message ?? body.error?.message ?? r.status}]\n`);
      if (!r.ok) break;
      approval = undefined;
      const next = await waitForReply(base, key, conversation, lastMessageId);
      if (!next) {
        say('  [no reply yet; it will be in the conversation]\n');
        break;
      }
      lastMessageId = next.lastId;
      say(`agent> ${next.text}\n`);
      approval = next.approval;
    }
    if (approval && !operatorKey) say(`  [approval ${approval.code} is waiting for an operator]\n`);
  }
  rl.close();
  return 0;
}

async function* sse(res: Response): AsyncGenerator<Record<string, unknown>> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      if (!data || data === '[DONE]') continue;
      try {
        yield JSON.parse(data) as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
    }
  }
}

async function errorText(res: Response): Promise<string> {
  const b = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
  return b.error?.message ?? `HTTP ${res.status}`;
}

async function latestMessageId(base: string, key: string, conversation: string): Promise<number> {
  const r = await fetch(`${base}/v1/conversations/${encodeURIComponent(conversation)}/messages`, { headers: { authorization: `Bearer ${key}` } }).catch(
    () => null,
  );
  if (!r?.ok) return 0;
  const b = (await r.json()) as { data: Array<{ id: number }> };
  return b.data.length ? b.data[b.data.length - 1]!.id : 0;
}

/** After an approval: the resumed turn's answer, read from the conversation. */
async function waitForReply(base: string, key: string, conversation: string, after: number, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = await fetch(`${base}/v1/conversations/${encodeURIComponent(conversation)}/messages?after=${after}`, {
      headers: { authorization: `Bearer ${key}` },
    }).catch(() => null);
    if (r?.ok) {
      const b = (await r.json()) as { data: Array<{ id: number; role: string; content: string }> };
      const last = b.data[b.data.length - 1];
      // The turn is over when its last stored message is the assistant's.
      if (last && last.role === 'assistant' && last.content) {
        return { text: last.content, lastId: last.id, approval: undefined as undefined | { code: string; tool: string; tier: string; expiresAt: string } };
      }
    }
    await new Promise((res) => setTimeout(res, 400));
  }
  return null;
}
