/**
 * Driving single tool calls through a real gateway: a fake model that turns a
 * user message into one tool call, and a helper that sends the message (an
 * operator approving whatever is asked, when given a key) and returns what the
 * tool handed the model.
 */
import type { Gateway } from '../../app/gateway.js';
import { type FakeLlm, type FakeRequest, reply, toolCall } from '../fakes/fake-llm.js';
import { API_KEY, eventually, openaiClient } from './gateway.js';

type Msg = { role: string; content: unknown };

/**
 * "run: CMD" → shell_exec, "write: PATH|CONTENT" → file_write, "read: PATH" →
 * file_read, "page: ID" → tool_result_page; after the tool, "done".
 */
export function toolCommandModel(req: FakeRequest) {
  const msgs = req.body.messages as Msg[];
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply('done');
  const text = String(last.content);
  let m: RegExpExecArray | null;
  if ((m = /^run: ([\s\S]+)$/.exec(text))) return toolCall('shell_exec', { command: m[1], timeoutSeconds: 20 });
  if ((m = /^write: ([^|]+)\|([\s\S]*)$/.exec(text))) return toolCall('file_write', { path: m[1], content: m[2] });
  if ((m = /^read: (.+)$/.exec(text))) return toolCall('file_read', { path: m[1] });
  if ((m = /^page: (\S+)$/.exec(text))) return toolCall('tool_result_page', { resultId: m[1], offset: 0, length: 200 });
  return reply('nothing to do');
}

export interface ToolTurn {
  conversation: string;
  text: string;
  key?: string;
  /** An operator key that approves any approval the call asks for. */
  approveWith?: string;
}

/** Sends the message and returns the tool result the model received for it. */
export async function toolResultOf(gw: Gateway, fake: FakeLlm, t: ToolTurn): Promise<string> {
  const before = fake.requests.length;
  const r = await openaiClient(gw.url!, t.key ?? API_KEY, { 'X-Switchboard-Conversation': t.conversation }).chat.completions.create({
    model: 'default',
    messages: [{ role: 'user', content: t.text }],
  });
  const approval = (r as unknown as { switchboard?: { approval?: { code: string } } }).switchboard?.approval;
  if (approval && t.approveWith) {
    const res = await fetch(`${gw.url}/v1/approvals/${approval.code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.approveWith}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    if (res.status !== 200) throw new Error(`approving ${approval.code} failed: ${res.status} ${await res.text()}`);
  }
  return eventually(async () => {
    for (const q of fake.requests.slice(before)) {
      const msgs = q.body.messages as Msg[];
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool' && msgs.some((m) => m.role === 'user' && String(m.content).includes(t.text))) return String(last.content);
    }
    return null;
  }, 30_000);
}
