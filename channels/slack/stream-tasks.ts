import { callStatus, type ToolCall } from '../../src/channel/index.js';

/** A tool call in a native stream: Slack's task_update chunk. */
export type TaskChunk = { type: 'task_update'; id: string; title: string; status: 'pending' | 'in_progress' | 'complete' | 'error' };

/** A tool call as a native-streaming task: a parked call is pending, waiting for approval, never "Failed". */
export function taskOf(c: ToolCall): TaskChunk {
  switch (c.state) {
    case 'running':
      return { type: 'task_update', id: c.id, title: `Running ${c.name}`, status: 'in_progress' };
    case 'done':
      return { type: 'task_update', id: c.id, title: `Ran ${c.name}`, status: 'complete' };
    case 'failed':
      return { type: 'task_update', id: c.id, title: `Failed ${c.name}`, status: 'error' };
    case 'waiting':
      return { type: 'task_update', id: c.id, title: `${c.name} ${callStatus(c)}`, status: 'pending' };
  }
}

/** Slack errors that mean native streaming is not available to this app at all. */
export const NATIVE_UNAVAILABLE = new Set([
  'unknown_method',
  'method_deprecated',
  'not_allowed_token_type',
  'missing_scope',
  'feature_not_enabled',
  'invalid_auth',
  'not_authed',
  'team_not_allowed',
]);
