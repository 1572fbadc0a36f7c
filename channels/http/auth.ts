import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Who made a request: the hash of its API key (never the key itself). */
export interface Principal {
  id: string;
}

/** Bearer API keys. Keys are compared by hash in constant time. */
export class ApiKeyAuth {
  private readonly hashes: Buffer[];

  constructor(
    keys: string[],
    private readonly openAccess: boolean,
  ) {
    this.hashes = keys.map((k) => sha256(k));
  }

  /** The principal, or null when the request carries no valid key. */
  authenticate(req: IncomingMessage): Principal | null {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) return this.openAccess ? { id: 'anonymous' } : null;
    const h = sha256(m[1]!);
    for (const known of this.hashes) if (timingSafeEqual(h, known)) return { id: h.toString('hex').slice(0, 16) };
    return this.openAccess ? { id: 'anonymous' } : null;
  }

  get configured(): boolean {
    return this.hashes.length > 0 || this.openAccess;
  }
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
