/**
 * Markdown → plain SMS text. Phones show no markup: emphasis, headings, quotes
 * and code fences lose their marks, links keep their address, tables become
 * rows of cells. Typographic characters outside GSM-7 (curly quotes, dashes,
 * ellipsis, non-breaking spaces) become ASCII: one such character switches the
 * whole message to UCS-2, 70 characters a segment instead of 160.
 */
export function toPlainText(markdown: string): string {
  const text = markdown.replace(/\r\n?/g, '\n');
  const out: string[] = [];
  const lines = text.split('\n');
  let fence: string | null = null;
  for (const line of lines) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (fence !== null) {
      if (f && f[1]!.startsWith(fence)) fence = null;
      else out.push(line); // code: verbatim
      continue;
    }
    if (f) {
      fence = f[1]!;
      continue;
    }
    const plain = plainLine(line);
    if (plain !== null) out.push(plain);
  }
  return asciiPunctuation(out.join('\n'))
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** One line of prose; null drops it. */
function plainLine(line: string): string | null {
  // Horizontal rules become a paragraph break; table separator rows vanish.
  if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return '';
  if (line.includes('|') && line.includes('-') && /^[\s|:-]+$/.test(line)) return null;
  let s = line;
  s = s.replace(/^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/, '$1'); // headings
  s = s.replace(/^(\s*>\s?)+/, ''); // quotes
  s = s.replace(/^(\s*)[*+]\s+/, '$1- '); // bullets as "- "
  s = s.replace(/^(\s*)- \[( |x|X)\]\s+/, '$1- '); // task lists
  if (/^\s*\|.*\|\s*$/.test(s))
    s = s
      .trim()
      .replace(/^\|\s*|\s*\|$/g, '')
      .split(/\s*\|\s*/)
      .join(' | '); // table rows
  return inline(s);
}

function inline(s: string): string {
  // Inline code is kept verbatim: protect it from the emphasis rules.
  const codes: string[] = [];
  s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, _t: string, code: string) => {
    codes.push(code.trim());
    return `\u0000${codes.length - 1}\u0000`;
  });
  s = s.replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1'); // images: alt text
  s = s.replace(/\[([^\]]+)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g, (_, label: string, url: string) =>
    label.trim() === url || `mailto:${label.trim()}` === url ? url : `${label} (${url})`,
  );
  s = s.replace(/<((?:https?|mailto):[^>\s]+)>/g, '$1'); // autolinks
  s = s.replace(/<br\s*\/?>/gi, '\n');
  s = s.replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, '$2'); // bold
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, '$1'); // strikethrough
  s = s.replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, '$1$2'); // *italic*
  s = s.replace(/(^|[^\w])_(?=\S)([^_\n]*?\S)_(?!\w)/g, '$1$2'); // _italic_ (not snake_case)
  s = s.replace(/\\([\\`*_{}[\]()#+\-.!|>~])/g, '$1'); // escapes
  return s.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[Number(i)]!);
}

function asciiPunctuation(s: string): string {
  return s
    .replace(/[\u2018\u2019\u201A\u2032]/g, "'")
    .replace(/[\u201C\u201D\u201E\u2033]/g, '"')
    .replace(/[\u2013\u2014\u2212]/g, '-')
    .replace(/\u2026/g, '...')
    .replace(/[\u00A0\u2007\u202F\u2009\u200A]/g, ' ')
    .replace(/[\u200B\u2060\uFEFF]/g, '')
    .replace(/\u2022/g, '-');
}
