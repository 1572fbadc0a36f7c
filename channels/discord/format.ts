/**
 * Markdown as models write it -> Discord's markdown. Discord renders most of it
 * (bold, italics, code, fences, quotes, lists, # to ### headings, masked links);
 * this adapts what it does not: deeper headings become bold lines, tables become
 * fenced blocks (so their columns stay aligned), images become links, rules and
 * <br> become line breaks. Code fences are left alone.
 */
const FENCE_RE = /^ {0,3}(`{3,}|~{3,})/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;

export function toDiscordMarkdown(md: string): string {
  const lines = md.replace(/\r\n/g, '\n').split('\n');
  const out: string[] = [];
  let fence: string | null = null;
  let inTable = false;
  for (const line of lines) {
    const f = FENCE_RE.exec(line);
    if (fence) {
      out.push(line);
      if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length && line.trim() === f[1]) fence = null;
      continue;
    }
    if (TABLE_ROW.test(line)) {
      if (!inTable) out.push('```');
      inTable = true;
      out.push(line);
      continue;
    }
    if (inTable) {
      out.push('```');
      inTable = false;
    }
    if (f) {
      fence = f[1]!;
      out.push(line);
      continue;
    }
    out.push(inline(block(line)));
  }
  if (inTable) out.push('```');
  return out.join('\n');
}

function block(line: string): string {
  const h = /^\s{0,3}(#{4,6})\s+(.*?)\s*#*\s*$/.exec(line);
  if (h) return `**${h[2]}**`;
  if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return '';
  return line;
}

function inline(line: string): string {
  return line.replace(/!\[([^\]]*)\]\(([^)\s]+)[^)]*\)/g, (_m, alt: string, url: string) => (alt ? `[${alt}](${url})` : url)).replace(/<br\s*\/?>/gi, '\n');
}
