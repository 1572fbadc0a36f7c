/**
 * chat.appendStream is rate limited per workspace, all streams together (about 100 calls a
 * minute): every native stream of one workspace draws on one token bucket. A stream denied a
 * token does not append now; its text waits for the next append (coarser appends) or the stop.
 * The buckets live in the deliverer, so the budget is per worker process: several workers
 * streaming into one workspace each take their own share.
 */
export class TokenBucket {
  private tokens: number;
  private at = Date.now();
  /** Tokens per millisecond. */
  private readonly rate: number;

  /** At most `perMinute` takes in any 60 s: a burst of `capacity`, the rest spread over the minute. */
  constructor(
    perMinute: number,
    private readonly capacity = Math.max(1, Math.min(10, Math.floor(perMinute / 10))),
  ) {
    this.tokens = capacity;
    this.rate = Math.max(1, perMinute - capacity) / 60_000;
  }

  /** Takes a token if there is one. */
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** How long until a token is there. */
  waitMs(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : Math.ceil((1 - this.tokens) / this.rate);
  }

  private refill(): void {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.at) * this.rate);
    this.at = now;
  }
}

/** One bucket per workspace (the conversation key's workspace part). */
export class AppendBudgets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly perMinute: number) {}

  for(workspace: string | undefined): TokenBucket {
    const key = workspace ?? '-';
    let b = this.buckets.get(key);
    if (!b) {
      b = new TokenBucket(this.perMinute);
      this.buckets.set(key, b);
    }
    return b;
  }
}

/** The workspace of a Slack conversation key (slack/<team>/<channel>/<thread>). */
export function workspaceOf(conversationKey: string): string | undefined {
  const team = conversationKey.split('/')[1];
  return team && team !== '-' ? team : undefined;
}
