import type { GatewayStore } from '../adapters/store/ports/index.js';
import { fileTools, type WriteScanner } from './builtin/files.js';
import { type RequestHandoff, requestHandoffTool } from './builtin/handoff.js';
import { memoryTools } from './builtin/memory.js';
import { resultPageTool } from './builtin/result-page.js';
import { type CreateSchedule, scheduleMessageTool } from './builtin/schedule.js';
import { conversationSearchTool } from './builtin/search.js';
import { shellExecTool } from './builtin/shell.js';
import { currentTime } from './builtin/time.js';
import { webFetchTool } from './builtin/web-fetch.js';
import type { AnyTool } from './contract.js';
import type { Sandbox } from './sandbox/types.js';

export interface BuiltinDeps {
  store: GatewayStore;
  scanWrite: WriteScanner;
  /** Where shell commands run; file tools create files as its owner. */
  sandbox: Sandbox;
  findSecrets: (text: string) => boolean;
  /** Names to offer; all when unset. */
  enabled?: string[];
  web?: { allowHosts?: string[]; allowCidrs?: string[] };
  /** With it, schedule_message (approval-gated) is offered. */
  createSchedule?: CreateSchedule;
  /** With it, request_handoff is offered (takeover.slaMinutes is what the model is told). */
  requestHandoff?: { request: RequestHandoff; slaMinutes: number };
}

/** The built-in tools, by name. */
export function builtinTools(d: BuiltinDeps): AnyTool[] {
  const all: AnyTool[] = [
    currentTime,
    webFetchTool(d.web ?? {}),
    shellExecTool(d.sandbox),
    ...fileTools(d.scanWrite, d.sandbox.owner),
    ...memoryTools(d.store, { maxChars: 500, findSecrets: d.findSecrets }),
    resultPageTool(d.store),
    conversationSearchTool(d.store),
    ...(d.createSchedule ? [scheduleMessageTool(d.createSchedule)] : []),
    ...(d.requestHandoff ? [requestHandoffTool(d.requestHandoff.request, d.requestHandoff.slaMinutes)] : []),
  ] as AnyTool[];
  return d.enabled ? all.filter((t) => d.enabled!.includes(t.name)) : all;
}
