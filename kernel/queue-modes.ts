/**
 * What happens to messages that arrive while a turn runs:
 * - followup: each waits for its own turn, in order (the default);
 * - collect: the waiting messages are answered together, once they stop coming;
 * - steer: they are injected into the running turn at its next model call
 *   (tool calls not started yet are skipped with a note);
 * - interrupt: the running turn is aborted and a new one answers everything waiting.
 */
export type QueueMode = 'steer' | 'followup' | 'collect' | 'interrupt';
export const QUEUE_MODES: readonly QueueMode[] = ['steer', 'followup', 'collect', 'interrupt'];

/** The conversations' settings queueModeFor reads (config.conversations). */
export interface QueueModeSettings {
  queueMode: QueueMode;
  queueModeByChannel: Record<string, QueueMode>;
}

export function queueModeFor(settings: QueueModeSettings, channel: string, override?: string | null): QueueMode {
  if (override && (QUEUE_MODES as readonly string[]).includes(override)) return override as QueueMode;
  const byChannel = settings.queueModeByChannel;
  return (Object.hasOwn(byChannel, channel) ? byChannel[channel] : undefined) ?? settings.queueMode;
}
