import { chownSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Owner } from './confined-fs.js';

/** The workspace path of a conversation (created by the first tool that needs it); file and shell tools never leave it. */
export function workspaceFor(dataDir: string, conversationId: string): string {
  return resolve(dataDir, 'workspaces', conversationId.replace(/[^A-Za-z0-9._-]/g, '_'));
}

/**
 * Creates the workspace if needed and returns its real path. With an owner
 * (the sandbox's host user when the gateway runs as root) the folder is made
 * theirs, so sandboxed commands can write in it.
 */
export function ensureWorkspace(dir: string, owner: Owner = null): string {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const real = realpathSync(dir);
  if (owner) {
    const st = statSync(real);
    if (st.uid !== owner.uid || st.gid !== owner.gid) chownSync(real, owner.uid, owner.gid);
  }
  return real;
}
