/** Raw header access in message order (mailparser's headerLines), unfolded. */
export type HeaderLines = ReadonlyArray<{ key: string; line: string }>;

export class RawHeaders {
  constructor(private readonly lines: HeaderLines) {}

  /** Every value of a header, topmost first. */
  all(name: string): string[] {
    const key = name.toLowerCase();
    return this.lines
      .filter((l) => l.key.toLowerCase() === key)
      .map((l) => {
        const unfolded = l.line.replace(/\r?\n[ \t]+/g, ' ');
        const i = unfolded.indexOf(':');
        return (i >= 0 ? unfolded.slice(i + 1) : unfolded).trim();
      });
  }

  first(name: string): string | undefined {
    return this.all(name)[0];
  }

  has(name: string): boolean {
    return this.all(name).length > 0;
  }
}

/** Message ids in a References / In-Reply-To header value, in order: ['<a@b>', '<c@d>']. */
export function messageIds(value: string | string[] | undefined): string[] {
  if (!value) return [];
  const text = Array.isArray(value) ? value.join(' ') : value;
  const ids = text.match(/<[^<>\s]+>/g);
  if (ids) return ids;
  // Some clients omit the brackets.
  return text
    .split(/[\s,]+/)
    .filter((s) => /^[^<>\s]+@[^<>\s]+$/.test(s))
    .map((s) => `<${s}>`);
}

export function normalizeMessageId(id: string | undefined): string | undefined {
  if (!id) return undefined;
  const [first] = messageIds(id);
  return first;
}

/** The domain of an address, lowercased. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at >= 0
    ? address
        .slice(at + 1)
        .toLowerCase()
        .replace(/\.$/, '')
    : '';
}
