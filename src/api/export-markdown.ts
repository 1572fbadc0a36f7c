import type { ConversationExport } from '../../adapters/store/ports/data-rights.js';

const fence = (s: string) => {
  const ticks = Math.max(3, ...[...s.matchAll(/`+/g)].map((m) => m[0].length + 1));
  return `${'`'.repeat(ticks)}\n${s}\n${'`'.repeat(ticks)}`;
};
const quote = (s: string) =>
  s
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

/** A conversation export as Markdown: who said what, tool calls with their results, approvals, usage. */
export function exportMarkdown(e: ConversationExport): string {
  const out: string[] = [
    `# Conversation ${e.conversation.key}`,
    '',
    `- id: \`${e.conversation.id}\``,
    `- channel: ${e.conversation.channel}, agent: ${e.conversation.agent}`,
    `- started: ${e.conversation.createdAt}`,
    `- people: ${e.senders.length ? e.senders.map((s) => `\`${s}\``).join(', ') : '(none)'}`,
    `- usage: ${e.usage.input} input + ${e.usage.output} output tokens, $${e.usage.costUsd.toFixed(4)}`,
    '',
    '## Messages',
    '',
  ];
  for (const m of e.messages) {
    out.push(`### ${m.at} · ${m.role === 'tool' ? `tool result: ${m.author}${m.isError ? ' (error)' : ''}` : m.author}`, '');
    if (m.role === 'tool') out.push(fence(m.text));
    else if (m.text) out.push(quote(m.text));
    for (const c of m.toolCalls ?? []) out.push('', `tool call \`${c.name}\` (${c.id}):`, '', fence(JSON.stringify(c.arguments, null, 2)));
    out.push('');
  }
  if (e.approvals.length) {
    out.push('## Approvals', '', '| code | tool | tier | status | asked by | decided by | via | at |', '|---|---|---|---|---|---|---|---|');
    const cell = (v: string | null) => (v ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');
    for (const a of e.approvals)
      out.push(`| ${[a.code, a.tool, a.tier, a.status, a.requester, a.decidedBy, a.decidedVia, a.decidedAt].map(cell).join(' | ')} |`);
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
