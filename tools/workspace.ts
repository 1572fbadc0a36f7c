import { mkdirSync, realpathSync } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ToolError } from './contract.js';

/** The folder of one conversation's files; file and shell tools never leave it. */
/** The workspace path of a conversation (created by the first tool that needs it). */
export function workspaceFor(dataDir: string, conversationId: string): string {
  return resolve(dataDir, 'workspaces', conversationId.replace(/[^A-Za-z0-9._-]/g, '_'));
}

/** Creates the workspace if needed; returns its real path. */
export function ensureWorkspace(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return realpathSync(dir);
}

/**
 * Resolves a path the model gave to a real path inside the workspace. Absolute
 * paths, `..` that climbs out, and symlinks whose target is outside are refused.
 */
export async function confine(dir: string, path: string, opts: { mustExist?: boolean } = {}): Promise<string> {
  const workspace = ensureWorkspace(dir);
  if (!path || path.includes('\0')) throw new ToolError('path is empty or contains a NUL byte');
  if (isAbsolute(path) || /^[a-zA-Z]:[\\/]/.test(path) || path.startsWith('~')) throw new ToolError(`absolute paths are not allowed: "${path}" (paths are relative to the workspace)`);
  const target = resolve(workspace, path);
  if (!inside(workspace, target)) throw new ToolError(`"${path}" is outside the workspace`);
  // Follow symlinks: the real location must be inside too. For a file that does
  // not exist yet, check its nearest existing ancestor.
  let probe = target;
  for (;;) {
    try {
      await lstat(probe);
      break;
    } catch {
      if (opts.mustExist && probe === target) throw new ToolError(`"${path}" does not exist`);
      const up = dirname(probe);
      if (up === probe) break;
      probe = up;
    }
  }
  const real = await realpath(probe);
  if (!inside(workspace, real)) throw new ToolError(`"${path}" leads outside the workspace (through a symlink)`);
  return probe === target ? real : join(real, relative(probe, target));
}

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}
