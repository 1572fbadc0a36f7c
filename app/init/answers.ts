import { createInterface, type Interface } from 'node:readline';

/** One question of init: its flag, what is asked, and what --yes takes. */
export interface Question {
  flag: string;
  prompt: string;
  default?: string;
  required?: boolean;
  /** Allowed answers (case-insensitive); anything else is asked again (or refused with --yes). */
  choices?: string[];
  /** Why a non-empty answer is refused (asked again, or refused with --yes). */
  validate?(value: string): string | undefined;
}

export class InitError extends Error {}

/**
 * Answers come from flags first; then, when interactive, from the terminal; with --yes, from
 * the defaults (a required question without a flag is an error that names the flag).
 */
export class Answers {
  readonly values: Record<string, string> = {};
  private rl?: Interface;
  /** Lines typed (or piped) before they were asked for: readline emits them at once, and none may be lost. */
  private readonly lines: string[] = [];
  private waiting?: (line: string | undefined) => void;
  private ended = false;

  constructor(
    private readonly flags: Record<string, string>,
    private readonly io: { interactive: boolean; input: NodeJS.ReadableStream; output: NodeJS.WritableStream },
  ) {}

  async ask(q: Question): Promise<string> {
    // Two channels may ask the same thing (the public URL): asked once.
    if (this.values[q.flag] !== undefined) return this.values[q.flag]!;
    const given = this.flags[q.flag];
    if (given !== undefined) return this.keep(q, this.check(q, given));
    if (!this.io.interactive) {
      if (q.required && !q.default) throw new InitError(`--${q.flag} is required with --yes (${q.prompt})`);
      return this.keep(q, q.default ?? '');
    }
    for (;;) {
      const hint = q.default ? ` [${q.default}]` : '';
      this.io.output.write(`${q.prompt}${hint}: `);
      const line = await this.nextLine();
      if (line === undefined) throw new InitError(`the input ended before "${q.prompt}" was answered`);
      const answer = line.trim() || q.default || '';
      if (!answer && q.required) {
        this.io.output.write('  an answer is needed\n');
        continue;
      }
      try {
        return this.keep(q, this.check(q, answer));
      } catch (err) {
        this.io.output.write(`  ${(err as Error).message}\n`);
      }
    }
  }

  close(): void {
    this.rl?.close();
  }

  private nextLine(): Promise<string | undefined> {
    if (!this.rl) {
      this.rl = createInterface({ input: this.io.input, terminal: false });
      this.rl.on('line', (line) => {
        if (this.waiting) {
          const w = this.waiting;
          this.waiting = undefined;
          w(line);
        } else this.lines.push(line);
      });
      this.rl.on('close', () => {
        this.ended = true;
        this.waiting?.(undefined);
      });
    }
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  private check(q: Question, value: string): string {
    if (q.choices && value && !q.choices.includes(value.toLowerCase())) {
      throw new InitError(`--${q.flag}: expected one of ${q.choices.join(', ')}, got "${value}"`);
    }
    const why = value ? q.validate?.(value) : undefined;
    if (why) throw new InitError(`--${q.flag}: ${why}`);
    return q.choices ? value.toLowerCase() : value;
  }

  private keep(q: Question, value: string): string {
    this.values[q.flag] = value;
    return value;
  }
}
