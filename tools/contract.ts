import type { AgentTool, AgentToolResult } from '@mariozechner/pi-agent-core';
import type { TSchema } from '@mariozechner/pi-ai';
import { z } from 'zod';
import { ignoreError, SwitchboardError } from '../kernel/errors.js';
import { linkedSignal } from '../kernel/linked-signal.js';
import type { Effect } from '../moat/approval-engine.js';

export type { Effect };

/** What a tool gets besides its arguments. */
export interface ToolContext {
  conversationId: string;
  turnId: string;
  /** The sender of the turn's first message, as a canonical identity (`slack:T1:U1`, `sms:+1555…`; kernel/identity.ts). */
  senderId: string;
  /** This conversation's workspace folder (file and shell tools stay inside it). */
  workspace: string;
  signal: AbortSignal;
  /** What this conversation said and its tools returned so far (the memory guard's evidence). */
  evidence?: () => { userMessages: string[]; toolOutputs: string[] };
}

export interface ToolOutput {
  text: string;
  details?: unknown;
}

/**
 * One tool contract for built-ins and MCP tools alike: a name, a description,
 * a zod schema (sent to the model as JSON Schema), the declared effect (the
 * approval engine treats undeclared tools as mutating), and an execute that
 * honours an abort signal, under a timeout and an output cap.
 */
export interface ToolDef<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  effect?: Effect;
  /** Groups tools for the planner guard (web, files, shell, memory, time, mcp:<server>). */
  toolset?: string;
  timeoutMs?: number;
  /** Largest output handed to the model, in bytes (longer output is capped, see result-cap). */
  outputCapBytes?: number;
  /** For tools that run a shell command: the command line, for the command classifier. */
  commandOf?(args: z.infer<S>): string;
  /** A guard of its own vets every call (memory writes: the memory guard), so no approval is asked below strict autonomy. */
  selfGuarded?: boolean;
  /** The effect was declared by a third party (an MCP server), not by our code: at strict autonomy every call asks. */
  effectFromThirdParty?: boolean;
  /**
   * Running the same call twice does no more than running it once (reads). A call that
   * started before a restart and did not finish runs again only when this is true;
   * otherwise the model is told it may or may not have completed (src/turn/journal.ts).
   */
  idempotent?: boolean;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<ToolOutput | string>;
}

/** A tool whose schema is already JSON Schema (MCP tools). */
export interface JsonTool extends Omit<ToolDef, 'schema' | 'execute'> {
  parameters: Record<string, unknown>;
  execute(args: unknown, ctx: ToolContext): Promise<ToolOutput | string>;
}

export type AnyTool = ToolDef | JsonTool;

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_OUTPUT_CAP = 32 * 1024;

export class ToolError extends SwitchboardError {
  readonly code = 'tool_failed';
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

export function defineTool<S extends z.ZodType>(def: ToolDef<S>): ToolDef<S> {
  return def;
}

const schemas = new WeakMap<object, Record<string, unknown>>();

/** The JSON Schema the model sees (computed once per tool). */
export function jsonSchemaOf(tool: AnyTool): Record<string, unknown> {
  if ('parameters' in tool) return tool.parameters;
  let schema = schemas.get(tool);
  if (!schema) {
    // The model writes the input: fields with defaults are optional there.
    const { $schema: _drop, ...rest } = z.toJSONSchema(tool.schema, { io: 'input' }) as Record<string, unknown>;
    schema = rest;
    schemas.set(tool, schema);
  }
  return schema;
}

const schemaSizes = new WeakMap<object, number>();

/** How many characters the tool's schema adds to a request (the planner weighs it on every turn). */
export function schemaCharsOf(tool: AnyTool): number {
  let n = schemaSizes.get(tool);
  if (n === undefined) schemaSizes.set(tool, (n = JSON.stringify(jsonSchemaOf(tool)).length));
  return n;
}

/** Validates arguments with the tool's own schema (zod) — MCP tools validate on their server. */
export function parseArgs(tool: AnyTool, args: unknown): unknown {
  if ('parameters' in tool) return args;
  const r = tool.schema.safeParse(args);
  if (!r.success)
    throw new ToolError(`invalid arguments for ${tool.name}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** Runs a tool under its timeout; the caller's signal aborts it too. Throws ToolError on failure. */
export async function runTool(tool: AnyTool, args: unknown, ctx: ToolContext): Promise<ToolOutput> {
  const timeoutMs = tool.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const parsed = parseArgs(tool, args);
  // Not AbortSignal.any/timeout: see linked-signal.ts (they outlive the call on Node 20).
  const link = linkedSignal(ctx.signal);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    link.abort(new DOMException(`${tool.name} timed out after ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  const signal = link.signal;
  let fail = () => {};
  const aborted = new Promise<never>((_, reject) => {
    fail = () => reject(new ToolError(timedOut ? `${tool.name} timed out after ${timeoutMs} ms` : `${tool.name} was aborted`));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(ignoreError('raced below, where it is handled; never left unhandled'));
  try {
    const run = (tool as ToolDef).execute(parsed as never, { ...ctx, signal });
    const out = await Promise.race([run, aborted]);
    const o = typeof out === 'string' ? { text: out } : out;
    // NUL cannot be stored in a Postgres text column: a tool's output with one would fail the turn on every retry.
    return o.text.includes('\0') ? { ...o, text: o.text.replace(/\0/g, '\\0') } : o;
  } catch (err) {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${tool.name} failed: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', fail);
    link.dispose();
  }
}

/** The pi-agent-core view of a tool: JSON Schema parameters, execute → text content. */
export function toAgentTool(tool: AnyTool, run: (toolCallId: string, args: unknown, signal?: AbortSignal) => Promise<AgentToolResult<unknown>>): AgentTool {
  return {
    name: tool.name,
    label: tool.name,
    description: tool.description,
    parameters: jsonSchemaOf(tool) as unknown as TSchema,
    execute: (id, params, signal) => run(id, params, signal),
  };
}
