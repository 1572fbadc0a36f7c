import { callStatus, type ReplyBuffer } from '../../src/channel/index.js';

/** The reply in Slack's Markdown, with notices and errors where they were said. */
export function slackReplyText(reply: ReplyBuffer): string {
  return reply.compose({ notice: (t) => `_${t}_`, error: (m) => `:warning: ${m}` });
}

/** The line under the reply: the tool running now (not at the end), or the calls waiting for an operator. */
export function statusLine(reply: ReplyBuffer, final: boolean): string | null {
  const running = reply.running;
  if (running && !final) return `:gear: Running \`${running.name}\`…`;
  const waiting = reply.waiting;
  if (waiting.length) return waiting.map((c) => `:hourglass_flowing_sand: \`${c.name}\` ${callStatus(c)}`).join('\n');
  return null;
}
