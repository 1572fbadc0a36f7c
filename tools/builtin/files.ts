import { z } from 'zod';
import { listTree, type Owner, openForRead, pathComponents, writeWhole } from '../confined-fs.js';
import { defineTool, ToolError } from '../contract.js';
import { ensureWorkspace } from '../workspace.js';

/** Secret scanning of what tools write: injected so this folder does not depend on the moat's policy. */
export type WriteScanner = (text: string) => { kinds: string[] } | null;

const MAX_READ = 256 * 1024;
const MAX_PATCH = 1024 * 1024;

/**
 * The file tools. Paths are resolved component by component without following
 * symlinks (confined-fs.ts), so they cannot leave the workspace even while a
 * sandboxed command changes it concurrently. `owner`: the sandbox's host user,
 * which must own what these tools create so that commands can change it.
 */
export function fileTools(scanWrite: WriteScanner, owner: Owner = null) {
  const refuseSecrets = (content: string) => {
    const hit = scanWrite(content);
    if (hit) throw new ToolError(`refused: the content contains what looks like a secret (${hit.kinds.join(', ')}); secrets are not written to files`);
  };

  const file_read = defineTool({
    name: 'file_read',
    description: 'Read a text file from the conversation workspace. Paths are relative to the workspace.',
    effect: 'read',
    idempotent: true,
    toolset: 'files',
    schema: z.object({
      path: z.string().describe('path relative to the workspace'),
      offset: z.number().int().min(0).optional().describe('first byte to read'),
      length: z.number().int().positive().max(MAX_READ).optional().describe('bytes to read'),
    }),
    async execute({ path, offset, length }, ctx) {
      const fh = await openForRead(ensureWorkspace(ctx.workspace, owner), path);
      try {
        const size = (await fh.stat()).size;
        const start = Math.min(offset ?? 0, size);
        const want = Math.min(length ?? MAX_READ, size - start);
        const buf = Buffer.alloc(want);
        const { bytesRead } = await fh.read(buf, 0, want, start);
        const more = start + bytesRead < size ? `\n[… ${size - start - bytesRead} more bytes; read on with offset ${start + bytesRead}]` : '';
        return buf.subarray(0, bytesRead).toString('utf8') + more;
      } finally {
        await fh.close();
      }
    },
  });

  const file_write = defineTool({
    name: 'file_write',
    description: 'Create or overwrite a text file in the conversation workspace.',
    effect: 'write',
    toolset: 'files',
    schema: z.object({ path: z.string(), content: z.string().max(1_000_000) }),
    async execute({ path, content }, ctx) {
      refuseSecrets(content);
      await writeWhole(ensureWorkspace(ctx.workspace, owner), path, content, owner);
      return `wrote ${Buffer.byteLength(content)} bytes to ${normalized(path)}`;
    },
  });

  const file_patch = defineTool({
    name: 'file_patch',
    description: 'Replace one exact occurrence of a string in a workspace file.',
    effect: 'write',
    toolset: 'files',
    schema: z.object({ path: z.string(), find: z.string().min(1), replace: z.string() }),
    async execute({ path, find, replace }, ctx) {
      refuseSecrets(replace);
      const root = ensureWorkspace(ctx.workspace, owner);
      const fh = await openForRead(root, path);
      const bytes = await (async () => {
        // Patching rewrites the whole file: a bounded size, and text only (a binary file would be corrupted).
        if ((await fh.stat()).size > MAX_PATCH) throw new ToolError(`"${path}" is larger than ${MAX_PATCH} bytes; file_patch edits text files up to that size`);
        return fh.readFile();
      })().finally(() => fh.close());
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        throw new ToolError(`"${path}" is not UTF-8 text; file_patch edits text files only`);
      }
      const at = text.indexOf(find);
      if (at < 0) throw new ToolError(`the text to replace was not found in ${path}`);
      if (text.indexOf(find, at + 1) >= 0) throw new ToolError(`the text to replace occurs more than once in ${path}; give more context`);
      await writeWhole(root, path, text.slice(0, at) + replace + text.slice(at + find.length), owner);
      return `patched ${path}`;
    },
  });

  const file_list = defineTool({
    name: 'file_list',
    description: 'List files in a workspace folder (recursively, up to 500 entries).',
    effect: 'read',
    idempotent: true,
    toolset: 'files',
    schema: z.object({ path: z.string().default('.') }),
    async execute({ path }, ctx) {
      const entries = await listTree(ensureWorkspace(ctx.workspace, owner), path, 500);
      const out = entries.map((e) => e.path + (e.kind === 'folder' ? '/' : e.kind === 'symlink' ? ' (symlink)' : ''));
      return out.length ? out.join('\n') : '(empty)';
    },
  });

  return [file_read, file_write, file_patch, file_list];
}

/** The path as the tools resolve it, for messages. */
function normalized(path: string): string {
  return pathComponents(path).join('/');
}
