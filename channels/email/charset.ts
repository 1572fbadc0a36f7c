/** Windows-1252's characters at 0x80–0x9F (where ISO-8859-1 has control codes), back to their bytes. */
const CP1252_BYTES = new Map<string, number>(
  [
    [0x20ac, 0x80],
    [0x201a, 0x82],
    [0x0192, 0x83],
    [0x201e, 0x84],
    [0x2026, 0x85],
    [0x2020, 0x86],
    [0x2021, 0x87],
    [0x02c6, 0x88],
    [0x2030, 0x89],
    [0x0160, 0x8a],
    [0x2039, 0x8b],
    [0x0152, 0x8c],
    [0x017d, 0x8e],
    [0x2018, 0x91],
    [0x2019, 0x92],
    [0x201c, 0x93],
    [0x201d, 0x94],
    [0x2022, 0x95],
    [0x2013, 0x96],
    [0x2014, 0x97],
    [0x02dc, 0x98],
    [0x2122, 0x99],
    [0x0161, 0x9a],
    [0x203a, 0x9b],
    [0x0153, 0x9c],
    [0x017e, 0x9e],
    [0x0178, 0x9f],
  ].map(([cp, b]) => [String.fromCodePoint(cp!), b!]),
);

/** A UTF-8 lead byte read as Latin-1/Windows-1252 (Ã, Â, â, ð…) followed by what a continuation byte becomes. */
const MOJIBAKE =
  /[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]/;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * UTF-8 text that was labelled with a single-byte charset (ISO-8859-1, Windows-1252…) and decoded so:
 * "CafÃ© â€“ grÃ¶ÃŸer" back to "Café – größer". Only when every character maps back to one byte and
 * those bytes are valid UTF-8 with at least one multi-byte sequence (real Latin-1 text such as
 * "café au lait" is not valid UTF-8 and stays as it is); otherwise the text is returned unchanged.
 */
export function repairMislabeledUtf8(text: string): string {
  if (!text || !MOJIBAKE.test(text)) return text;
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const b = code <= 0xff ? code : CP1252_BYTES.get(text[i]!);
    if (b === undefined) return text;
    bytes[i] = b;
  }
  try {
    return utf8.decode(bytes);
  } catch {
    return text; // not UTF-8 after all: the declared charset was right
  }
}
