/**
 * The agent writes markdown; mail wants a text part and an HTML part. A small
 * converter: paragraphs, headings, fenced code, inline code, bold, italic,
 * strikethrough, lists, block quotes, rules and links (http, https, mailto
 * only). Everything the model wrote is escaped before any tag is added.
 */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const SAFE_URL = /^(https?:\/\/|mailto:)[^\s]+$/i;

function inline(text: string): string {
  // Code spans first, kept out of every other rule.
  const codes: string[] = [];
  let s = text.replace(/`([^`\n]+)`/g, (_, code: string) => {
    codes.push(`<code style="font-family:monospace;background:#f3f3f3;padding:0 3px">${escapeHtml(code)}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  const links: string[] = [];
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (whole, label: string, url: string) => {
    if (!SAFE_URL.test(url)) return whole;
    links.push(`<a href="${escapeHtml(url)}">${emphasis(escapeHtml(label))}</a>`);
    return `\u0001${links.length - 1}\u0001`;
  });
  s = emphasis(escapeHtml(s));
  s = s.replace(/\u0001(\d+)\u0001/g, (_, i: string) => links[Number(i)]!);
  return s.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[Number(i)]!);
}

function emphasis(s: string): string {
  return s
    .replace(/\*\*(?=\S)([^*]+?)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([^_]+?)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^*\w])\*(?=\S)([^*\n]+?)\*(?![*\w])/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=\S)([^_\n]+?)_(?!\w)/g, '$1<em>$2</em>')
    .replace(/~~(?=\S)([^~]+?)~~/g, '<del>$1</del>');
}

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const ORDERED = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;
const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;

export function markdownToHtml(md: string): string {
  const lines = md.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i]!.trim().startsWith(fence[1]!); i++) body.push(lines[i]!);
      i++; // closing fence (or the end)
      out.push(`<pre style="font-family:monospace;background:#f6f6f6;padding:8px;white-space:pre-wrap"><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const n = heading[1]!.length;
      out.push(`<h${n}>${inline(heading[2]!)}</h${n}>`);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push('<hr>');
      i++;
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = !BULLET.test(line);
      const start = ordered ? Number(ORDERED.exec(line)![1]) : 1;
      const items: string[] = [];
      while (i < lines.length) {
        const l = lines[i]!;
        const m = ordered ? ORDERED.exec(l) : BULLET.exec(l);
        if (m) items.push(ordered ? m[2]! : m[1]!);
        else if (l.trim() && /^\s+/.test(l) && items.length) items[items.length - 1] += `\n${l.trim()}`;
        else break;
        i++;
      }
      const lis = items.map((it) => `<li>${it.split('\n').map(inline).join('<br>')}</li>`).join('');
      out.push(ordered ? `<ol${start !== 1 ? ` start="${start}"` : ''}>${lis}</ol>` : `<ul>${lis}</ul>`);
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      for (; i < lines.length && QUOTE.test(lines[i]!); i++) body.push(QUOTE.exec(lines[i]!)![1]!);
      out.push(`<blockquote style="margin:0 0 0 8px;padding-left:8px;border-left:3px solid #ccc">${markdownToHtml(body.join('\n'))}</blockquote>`);
      continue;
    }
    const para: string[] = [];
    for (; i < lines.length; i++) {
      const l = lines[i]!;
      if (!l.trim() || FENCE.test(l) || HEADING.test(l) || BULLET.test(l) || ORDERED.test(l) || QUOTE.test(l) || RULE.test(l)) break;
      para.push(l.trim());
    }
    out.push(`<p>${para.map(inline).join('<br>')}</p>`);
  }
  return out.join('\n');
}

/** The HTML part of a reply. */
export function htmlDocument(md: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"></head><body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;line-height:1.45">${markdownToHtml(md)}</body></html>`;
}

/** The text part: the markdown, with links written out so they survive in plain text. */
export function markdownToText(md: string): string {
  return md.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (whole, label: string, url: string) =>
    SAFE_URL.test(url) ? (label === url ? url : `${label} <${url}>`) : whole,
  );
}
