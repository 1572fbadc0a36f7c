import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { defineTool, ToolError } from '../contract.js';
import { confine, ensureWorkspace } from '../workspace.js';

/** Secret scanning of what tools write: injected so this folder does not depend on the moat's policy. */
export type WriteScanner = (text: string) => { kinds: string[] } | null;

const MAX_READ = 256 * 1024;

export function fileTools(scanWrite: WriteScanner) {
  const refuseSecrets = (content: string) => {
    const hit = scanWrite(content);
    if (hit) throw new ToolError(`refused: the content contains what looks like a secret (${hit.kinds.join(', ')}); secrets are not written to files`);
  };

  const file_read = defineTool({
    name: 'file_read',
    description: 'Read a text file from the conversation workspace. Paths are relative to the workspace.',
    effect: 'read',
    toolset: 'files',
    schema: z.object({
      path: z.string().describe('path relative to the workspace'),
      offset: z.number().int().min(0).optional().describe('first byte to read'),
      length: z.number().int().positive().max(MAX_READ).optional().describe('bytes to read'),
    }),
    async execute({ path, offset, length }, ctx) {
      const p = await confine(ctx.workspace, path, { mustExist: true });
      const st = await stat(p);
      if (!st.isFile()) throw new ToolError(`"${path}" is not a file`);
      const buf = await readFile(p);
      const start = offset ?? 0;
      const slice = buf.subarray(start, start + (length ?? MAX_READ));
      const more = start + slice.length < buf.length ? `\n[… ${buf.length - start - slice.length} more bytes; read on with offset ${start + slice.length}]` : '';
      return slice.toString('utf8') + more;
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
      const p = await confine(ctx.workspace, path);
      await mkdir(dirname(p), { recursive: true });
      await writeFile(p, content);
      return `wrote ${Buffer.byteLength(content)} bytes to ${relative(ensureWorkspace(ctx.workspace), p)}`;
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
      const p = await confine(ctx.workspace, path, { mustExist: true });
      const text = await readFile(p, 'utf8');
      const at = text.indexOf(find);
      if (at < 0) throw new ToolError(`the text to replace was not found in ${path}`);
      if (text.indexOf(find, at + 1) >= 0) throw new ToolError(`the text to replace occurs more than once in ${path}; give more context`);
      await writeFile(p, text.slice(0, at) + replace + text.slice(at + find.length));
      return `patched ${path}`;
    },
  });

  const file_list = defineTool({
    name: 'file_list',
    description: 'List files in a workspace folder (recursively, up to 500 entries).',
    effect: 'read',
    toolset: 'files',
    schema: z.object({ path: z.string().default('.') }),
    async execute({ path }, ctx) {
      const root = await confine(ctx.workspace, path, { mustExist: true });
      const out: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true })) {
          if (out.length >= 500) return;
          const full = join(dir, e.name);
          out.push(relative(ensureWorkspace(ctx.workspace), full) + (e.isDirectory() ? '/' : e.isSymbolicLink() ? ' (symlink)' : ''));
          if (e.isDirectory()) await walk(full);
        }
      };
      await walk(root);
      return out.length ? out.join('\n') : '(empty)';
    },
  });

  return [file_read, file_write, file_patch, file_list];
}
