/**
 * Markdown (what models write) to Telegram's HTML parse mode, which never
 * breaks: every piece of text is escaped (&, <, >), every tag is made in a
 * pair, markers without their partner stay as text, and the result is checked
 * for balance before it is used (unbalanced: the escaped text without markup).
 * Telegram still refusing it ("can't parse entities") is handled by the
 * deliverer, which sends the plain text (htmlToPlain) instead.
 */

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escAttr = (s: string) => esc(s).replace(/"/g, '&quot;');

const FENCE = /^(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*$/;

/** Inline markdown of one paragraph run (no fences). */
function inline(text: string): string {
  const codes: string[] = [];
  // Code spans first: nothing inside them is markup.
  let s = text.replace(/(`+)([^`\n]|[^`\n][\s\S]*?[^`\n])\1(?!`)/g, (_, _t, code: string) => {
    codes.push(`<code>${esc(code)}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  s = esc(s);
  s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_, label: string, url: string) => {
    // The opening tag is kept out of reach of the emphasis rules (a "_" or "*" in a URL).
    codes.push(`<a href="${escAttr(url.replace(/&amp;/g, '&'))}">`);
    return `\u0000${codes.length - 1}\u0000${label}</a>`;
  });
  s = s.replace(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm, '<b>$1</b>');
  s = s.replace(/\*\*(?=\S)([^<>\n]*?\S)\*\*/g, '<b>$1</b>');
  s = s.replace(/(?<![\w*])__(?=\S)([^<>\n]*?\S)__(?![\w*])/g, '<b>$1</b>');
  s = s.replace(/(?<![\w*])\*(?=[^\s*])([^*<>\n]*?[^\s*])?\*(?![\w*])/g, (m, inner: string | undefined) => (inner === undefined ? m : `<i>${inner}</i>`));
  s = s.replace(/(?<![\w_])_(?=[^\s_])([^_<>\n]*?[^\s_])_(?![\w_])/g, '<i>$1</i>');
  s = s.replace(/~~(?=\S)([^<>\n~]*?\S)~~/g, '<s>$1</s>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[Number(i)] ?? '');
}

/** Markdown to Telegram HTML. */
export function toTelegramHtml(markdown: string): string {
  const lines = markdown.replace(/\u0000/g, '').split('\n');
  const out: string[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length) out.push(inline(para.join('\n')));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) {
      para.push(lines[i]!);
      continue;
    }
    flush();
    const marker = open[1]!;
    const lang = open[2] ?? '';
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.trimEnd().startsWith(marker); i++) body.push(lines[i]!);
    const code = esc(body.join('\n'));
    out.push(lang ? `<pre><code class="language-${escAttr(lang)}">${code}</code></pre>` : `<pre>${code}</pre>`);
  }
  flush();
  const html = out.join('\n');
  return balanced(html) ? html : esc(markdown);
}

/** Whether every tag is closed, in order (what Telegram's parser requires). */
export function balanced(html: string): boolean {
  const stack: string[] = [];
  for (const m of html.matchAll(/<(\/?)([a-z-]+)[^>]*>/g)) {
    if (!m[1]) stack.push(m[2]!);
    else if (stack.pop() !== m[2]) return false;
  }
  return stack.length === 0;
}

/** The text an HTML message shows, for sending it without a parse mode. */
export function htmlToPlain(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

export { esc as escapeHtml };
