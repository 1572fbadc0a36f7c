import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { parseApprovalAnswer } from '../../src/approvals/parse.js';
import { alwaysOffered, answerApproval, type ChatApproval, followResumedTurn, latestMessageId } from './chat-gateway.js';
import { operatorKeyFrom } from './http.js';

export const CHAT_USAGE = `usage: switchboard chat [--conversation ID] [--model AGENT] [--operator-key KEY]

Talks to a running gateway: SWITCHBOARD_URL (default http://127.0.0.1:8787) with a user key in
SWITCHBOARD_API_KEY. With an operator key (--operator-key, SWITCHBOARD_OPERATOR_KEY, or the first of
SWITCHBOARD_OPERATOR_KEYS) approval requests are answered inline, through the approvals API; a typed
"YES K7Q4P" goes there too, never into the conversation. After an approval the chat waits for the
resumed answer (type a line to stop waiting). Type /quit to leave; /new, /status, /stop and /mode go
to the gateway.`;

interface Io {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

/** How long after an approval's deadline the chat still waits for the resumed turn. */
const AFTER_DEADLINE_MS = 30_000;

/** `switchboard chat`: a terminal chat with streamed output, tool activity and inline approvals. */
export async function runChat(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  io: Io = { input: process.stdin, output: process.stdout },
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { conversation: { type: 'string' }, model: { type: 'string' }, 'operator-key': { type: 'string' } } });
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
  const operatorKey = parsed.values['operator-key'] || operatorKeyFrom(env);
  const conversation = parsed.values.conversation ?? `chat-${randomBytes(4).toString('hex')}`;
  const model = parsed.values.model ?? 'default';
  const say = (s: string) => io.output.write(s);
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  // Lines typed while an answer is still streaming are kept, not lost; a line typed while the
  // chat waits for a resumed turn ends the wait and is the next message.
  const lines = rl[Symbol.asyncIterator]();
  let typedAhead: Promise<string | null> | undefined;
  const nextLine = (): Promise<string | null> =>
    lines.next().then(
      (r) => (r.done ? null : (r.value as string)),
      () => null,
    );
  const ask = (): Promise<string | null> => {
    const p = typedAhead ?? nextLine();
    typedAhead = undefined;
    return p;
  };
  let lastMessageId = await latestMessageId(base, key, conversation);
  say(`conversation ${conversation} at ${base} — /quit to leave\n`);

  /** Who may answer this request from here: the operator key, else the user's own key when the gateway lets the requester answer. */
  const answerKeyFor = (a: ChatApproval) => operatorKey ?? (a.selfApprovable === true ? key : undefined);

  /** A turn waits for approvals: answer inline where this chat may, then follow the conversation until the resumed turn answers. */
  const whileParked = async (first: ChatApproval | undefined, turn: string | undefined, answered = false): Promise<void> => {
    const seen = new Set<string>();
    let approval = first;
    while (approval) {
      seen.add(approval.code);
      const answerKey = answerKeyFor(approval);
      if (answered) answered = false;
      else if (answerKey) {
        const always = alwaysOffered(approval);
        say(`approval ${approval.code} (${approval.tier}) for ${approval.tool}: [y]es / [n]o${always ? ' / [a]lways' : ''} / [s]kip? `);
        const a = ((await ask()) ?? 's').trim().toLowerCase();
        const decision = a.startsWith('y') ? 'approve' : always && a.startsWith('a') ? 'always' : a.startsWith('n') ? 'deny' : null;
        if (decision) say(`  [${(await answerApproval(base, answerKey, approval.code, decision)).message}]\n`);
        else say(`  [approval ${approval.code} left waiting]\n`);
      } else {
        say(`  [approval ${approval.code} is waiting for an operator; answer it here with --operator-key or SWITCHBOARD_OPERATOR_KEY]\n`);
      }
      say('  [waiting for the answer; type a line to stop waiting]\n');
      const line = nextLine();
      const until = Math.max(Date.now(), Date.parse(approval.expiresAt) || 0) + AFTER_DEADLINE_MS;
      const r = await followResumedTurn({ base, key, operatorKey, conversation, turn, after: lastMessageId, seen }, until, line);
      // Whatever ended the wait, a line typed meanwhile is the next message.
      typedAhead = line;
      if (r.kind === 'answer') {
        lastMessageId = r.lastId;
        say(`agent> ${r.text}\n`);
      } else if (r.kind === 'timeout') say('  [no answer yet; it will be in the conversation]\n');
      approval = r.kind === 'approval' ? r.approval : undefined;
    }
  };

  for (;;) {
    say('you> ');
    const line = await ask();
    if (line === null) break;
    const text = line.trim();
    if (!text) continue;
    if (text === '/quit' || text === '/exit') break;
    // "YES K7Q4P" typed: an answer through the approvals API (the operator key, else the user's own), never a chat message.
    const typed = parseApprovalAnswer(text);
    if (typed) {
      const r = await answerApproval(base, operatorKey ?? key, typed.code, typed.decision);
      say(`  [${r.message}]\n`);
      // Its turn resumes now (when this was its last request): follow it for a while.
      if (r.ok) await whileParked({ code: typed.code, tool: '', tier: '', expiresAt: new Date(Date.now() + 90_000).toISOString() }, undefined, true);
      continue;
    }
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
    let approval: ChatApproval | undefined;
    let turn: string | undefined;
    for await (const chunk of sse(res)) {
      const sb = chunk.switchboard as Record<string, unknown> | undefined;
      const delta = (chunk.choices as Array<{ delta?: { content?: string } }> | undefined)?.[0]?.delta?.content;
      // A chunk with an approval card carries its text fallback: where this chat may answer, the card is an inline prompt instead.
      const card = sb?.approval as ChatApproval | undefined;
      if (delta && !(card && answerKeyFor(card)) && !sb?.notice) say(delta);
      if (sb?.tool) {
        const t = sb.tool as { name: string; status: string };
        // "[tool shell_exec waiting for approval (code K7Q4P)]" for a parked call, never "failed".
        say(`\n  [tool ${t.name} ${t.status}]\n`);
      }
      if (sb?.reset) say('\n  [the answer restarts]\n');
      if (sb?.notice) say(`\n  [${String(sb.notice)}]\n`);
      if (card) approval = card;
      if (typeof sb?.turn === 'string') turn = sb.turn;
      if (chunk.error) say(`\n[error] ${(chunk.error as { message: string }).message}`);
    }
    say('\n');
    lastMessageId = await latestMessageId(base, key, conversation);
    if (approval) await whileParked(approval, turn);
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
