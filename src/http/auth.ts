import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Who made a request: the hash of its API key (never the key itself). */
export interface Principal {
  id: string;
  /** Holds an operator key (SWITCHBOARD_OPERATOR_KEYS): may answer approvals and read any conversation. */
  operator: boolean;
}

/** Bearer API keys. Keys are compared by hash in constant time. */
export class ApiKeyAuth {
  private readonly hashes: Buffer[];
  private readonly operatorHashes: Buffer[];

  constructor(
    keys: string[],
    private readonly openAccess: boolean,
    operatorKeys: string[] = [],
  ) {
    this.hashes = keys.map((k) => sha256(k));
    this.operatorHashes = operatorKeys.map((k) => sha256(k));
  }

  /** The principal, or null when the request carries no valid key. */
  authenticate(req: IncomingMessage): Principal | null {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const anonymous = this.openAccess ? { id: 'anonymous', operator: false } : null;
    if (!m) return anonymous;
    const h = sha256(m[1]!);
    const id = h.toString('hex').slice(0, 16);
    // Compare against every key (no early exit), in constant time each.
    let user = false;
    let operator = false;
    for (const known of this.hashes) user = timingSafeEqual(h, known) || user;
    for (const known of this.operatorHashes) operator = timingSafeEqual(h, known) || operator;
    if (operator) return { id: `op:${id}`, operator: true };
    if (user) return { id, operator: false };
    return anonymous;
  }

  get configured(): boolean {
    return this.hashes.length > 0 || this.openAccess;
  }
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
