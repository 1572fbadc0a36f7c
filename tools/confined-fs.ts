import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, opendir } from 'node:fs/promises';
import { ToolError } from './contract.js';

/**
 * File access inside a workspace with openat-style resolution: the path is
 * walked one component at a time, each opened relative to the folder opened
 * before it (through /proc/self/fd/N, which Linux resolves to the open folder
 * itself) and with O_NOFOLLOW. No symlink is ever followed, and nothing a
 * concurrent command renames or swaps between a check and a use can lead the
 * walk outside the workspace: there is no check separate from the use.
 */
const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

export type Owner = { uid: number; gid: number } | null;

/** The model's relative path as components; refuses absolute paths, `~`, NUL and climbing out. */
export function pathComponents(path: string): string[] {
  if (!path || path.includes('\0')) throw new ToolError('path is empty or contains a NUL byte');
  if (path.startsWith('/') || /^[a-zA-Z]:[\\/]/.test(path) || path.startsWith('~'))
    throw new ToolError(`absolute paths are not allowed: "${path}" (paths are relative to the workspace)`);
  const out: string[] = [];
  for (const c of path.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (!out.length) throw new ToolError(`"${path}" is outside the workspace`);
      out.pop();
    } else out.push(c);
  }
  return out;
}

const via = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

function explain(err: NodeJS.ErrnoException, shown: string): ToolError {
  switch (err.code) {
    case 'ELOOP':
      return new ToolError(`"${shown}" is a symlink; file tools do not follow symlinks, so nothing outside the workspace is reached`);
    case 'ENOTDIR':
      return new ToolError(`"${shown}" is not a folder`);
    case 'ENOENT':
      return new ToolError(`"${shown}" does not exist`);
    case 'EISDIR':
      return new ToolError(`"${shown}" is a folder, not a file`);
    case 'EACCES':
    case 'EPERM':
      return new ToolError(`"${shown}" is not accessible`);
    default:
      return new ToolError(`"${shown}": ${err.message}`);
  }
}

/** Opens the folder at `comps` under the workspace root (creating missing folders when asked). */
async function openFolder(root: string, comps: string[], create: Owner | false): Promise<FileHandle> {
  let dir = await open(root, O_RDONLY | O_DIRECTORY);
  const walked: string[] = [];
  try {
    for (const c of comps) {
      walked.push(c);
      let next: FileHandle;
      try {
        next = await open(via(dir, c), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        // O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR: say what it really is.
        if (
          e.code === 'ENOTDIR' &&
          (await lstat(via(dir, c)).then(
            (st) => st.isSymbolicLink(),
            () => false,
          ))
        )
          throw explain({ ...e, code: 'ELOOP' }, walked.join('/'));
        if (e.code !== 'ENOENT' || create === false) throw explain(e, walked.join('/'));
        // mkdir does not follow a symlink in the last component: one swapped in fails here.
        await mkdir(via(dir, c)).catch((m: NodeJS.ErrnoException) => {
          if (m.code !== 'EEXIST') throw explain(m, walked.join('/'));
        });
        next = await open(via(dir, c), O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch((m: NodeJS.ErrnoException) => {
          throw explain(m, walked.join('/'));
        });
        if (create) await next.chown(create.uid, create.gid);
      }
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

/** Opens an existing regular file for reading. */
export async function openForRead(root: string, path: string): Promise<FileHandle> {
  const comps = pathComponents(path);
  if (!comps.length) throw new ToolError(`"${path}" is the workspace folder, not a file`);
  const dir = await openFolder(root, comps.slice(0, -1), false);
  try {
    const fh = await open(via(dir, comps.at(-1)!), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch((e: NodeJS.ErrnoException) => {
      throw explain(e, path);
    });
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      throw new ToolError(`"${path}" is not a file`);
    }
    return fh;
  } finally {
    await dir.close();
  }
}

/** Writes a whole file (created with its folders when missing), owned by `owner` when given. */
export async function writeWhole(root: string, path: string, content: string, owner: Owner): Promise<void> {
  const comps = pathComponents(path);
  if (!comps.length) throw new ToolError(`"${path}" is the workspace folder, not a file`);
  const dir = await openFolder(root, comps.slice(0, -1), owner ?? null);
  try {
    // No O_TRUNC before the handle is known to be a regular file we may write.
    const fh = await open(via(dir, comps.at(-1)!), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644).catch((e: NodeJS.ErrnoException) => {
      throw explain(e, path);
    });
    try {
      if (!(await fh.stat()).isFile()) throw new ToolError(`"${path}" is not a regular file`);
      await fh.truncate(0);
      await fh.write(content, 0, 'utf8');
      if (owner) await fh.chown(owner.uid, owner.gid);
    } finally {
      await fh.close();
    }
  } finally {
    await dir.close();
  }
}

export interface ListedEntry {
  path: string;
  kind: 'file' | 'folder' | 'symlink' | 'other';
}

/** Lists a folder recursively (symlinks listed, never entered), up to `max` entries. */
export async function listTree(root: string, path: string, max: number): Promise<ListedEntry[]> {
  const base = pathComponents(path);
  const out: ListedEntry[] = [];
  const walk = async (comps: string[]): Promise<void> => {
    const dir = await openFolder(root, comps, false);
    try {
      const d = await opendir(`/proc/self/fd/${dir.fd}`);
      const subfolders: string[] = [];
      for await (const e of d) {
        if (out.length >= max) break;
        const rel = [...comps, e.name].join('/');
        const kind = e.isDirectory() ? 'folder' : e.isSymbolicLink() ? 'symlink' : e.isFile() ? 'file' : 'other';
        out.push({ path: rel, kind });
        if (kind === 'folder') subfolders.push(e.name);
      }
      for (const s of subfolders) if (out.length < max) await walk([...comps, s]);
    } finally {
      await dir.close();
    }
  };
  await walk(base);
  return out;
}
