/**
 * Text conversions: the model writes Markdown, Slack's classic message text is
 * "mrkdwn" (*bold*, _italic_, ~strike~, <url|label>, &lt; escapes); inbound
 * Slack text carries <@U…>, <#C…|name>, <url|label> and entity escapes.
 * (Native streaming sends Markdown as it is: Slack renders markdown_text.)
 */

const PH = '\u0000';

/** Markdown → Slack mrkdwn. Code spans and blocks are kept verbatim. */
export function markdownToMrkdwn(md: string): string {
  const saved: string[] = [];
  const keep = (s: string) => `${PH}${saved.push(s) - 1}${PH}`;
  let s = md.replace(/\r\n/g, '\n');
  // Fenced code blocks (an unclosed one, mid-stream, runs to the end). The language tag is dropped: Slack would show it.
  s = s.replace(
    /(^|\n)```[^\n`]*\n([\s\S]*?)(\n```[ \t]*(?=\n|$)|$)/g,
    (_m, lead: string, body: string) => `${lead}${keep('```\n' + escapeText(body) + '\n```')}`,
  );
  s = s.replace(/`([^`\n]+)`/g, (_m, code: string) => keep('`' + escapeText(code) + '`'));
  s = s
    .split('\n')
    .map((line) => {
      // A block quote marker must stay a literal ">".
      const quote = /^(\s*)>\s?(.*)$/.exec(line);
      const prefix = quote ? `${quote[1]}> ` : '';
      let t = escapeText(quote ? quote[2]! : line);
      const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(t);
      if (heading) t = `${PH}B${heading[1]!.replace(/\*\*|__/g, '')}${PH}B`;
      t = t.replace(/^(\s*)[-*+]\s+/, '$1• ');
      t = t.replace(/^(\s*)(?:-{3,}|\*{3,}|_{3,})\s*$/, '$1──────────');
      return prefix + t;
    })
    .join('\n');
  // Links and images before emphasis (URLs may hold underscores and asterisks).
  s = s.replace(/!?\[([^\]\n]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g, (_m, label: string, url: string) => keep(label ? `<${url}|${label}>` : `<${url}>`));
  s = s.replace(/&lt;((?:https?|mailto):[^\s|]+?)&gt;/g, (_m, url: string) => keep(`<${url}>`));
  s = s.replace(/(https?:\/\/[^\s<>]+)/g, (url: string) => keep(url));
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, `${PH}B$1${PH}B`).replace(/__(?=\S)([\s\S]*?\S)__/g, `${PH}B$1${PH}B`);
  s = s.replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, '$1_$2_');
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, '~$1~');
  s = s.replace(new RegExp(`${PH}B`, 'g'), '*');
  return s.replace(new RegExp(`${PH}(\\d+)${PH}`, 'g'), (_m, i: string) => saved[Number(i)]!);
}

/** The three characters Slack wants escaped in message text. */
export function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Inbound Slack text → plain text for the model. `botUserId`'s mentions are removed. */
export function slackToPlain(text: string, botUserId?: string): string {
  let s = text;
  if (botUserId) s = s.replace(new RegExp(`<@${botUserId}(?:\\|[^>]*)?>`, 'g'), '');
  s = s
    .replace(/<@([A-Z0-9]+)\|([^>]+)>/g, '@$2')
    .replace(/<@([A-Z0-9]+)>/g, '@$1')
    .replace(/<#([A-Z0-9]+)\|([^>]*)>/g, (_m, id: string, name: string) => `#${name || id}`)
    .replace(/<#([A-Z0-9]+)>/g, '#$1')
    .replace(/<!subteam\^[A-Z0-9]+\|([^>]+)>/g, '$1')
    .replace(/<!date\^[^|>]*\|([^>]*)>/g, '$1')
    .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, '@$1')
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, (_m, url: string, label: string) =>
      label === url.replace(/^mailto:/, '') ? label : `${label} (${url})`,
    )
    .replace(/<((?:https?|mailto):[^>]+)>/g, '$1');
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

/** Slack's date formatting: shown in the reader's time zone, with a plain fallback. */
export function slackDate(d: Date): string {
  return `<!date^${Math.floor(d.getTime() / 1000)}^{date_short_pretty} at {time}|${d.toISOString()}>`;
}
