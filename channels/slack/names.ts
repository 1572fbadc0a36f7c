import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { TtlCache } from './cache.js';
import { slackError } from './client.js';

/**
 * Display names from users.info, cached (a failure is cached briefly, so a
 * missing scope costs one call a minute, not one per message). Never slows an
 * event down for long: past `waitMs` the message goes on without a name.
 */
export class NameResolver {
  private readonly cache = new TtlCache<string | null>(5_000);
  private readonly inflight = new Map<string, Promise<string | null>>();

  constructor(
    private readonly client: WebClient,
    private readonly ttlMs: number,
    private readonly log: Logger,
    private readonly waitMs = 1_000,
  ) {}

  async name(userId: string): Promise<string | undefined> {
    const hit = this.cache.get(userId);
    if (hit !== undefined) return hit ?? undefined;
    let p = this.inflight.get(userId);
    if (!p) {
      p = this.fetch(userId).finally(() => this.inflight.delete(userId));
      this.inflight.set(userId, p);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.waitMs);
    });
    try {
      return (await Promise.race([p, late])) ?? undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private async fetch(userId: string): Promise<string | null> {
    try {
      const r = await this.client.users.info({ user: userId });
      const u = r.user;
      const name = u?.profile?.display_name || u?.profile?.real_name || u?.real_name || u?.name || null;
      if (this.ttlMs > 0) this.cache.set(userId, name, this.ttlMs);
      return name;
    } catch (err) {
      this.log.debug({ user: userId, error: slackError(err) }, 'users.info failed; going on without a display name');
      this.cache.set(userId, null, 60_000);
      return null;
    }
  }
}
