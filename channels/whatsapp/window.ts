import type { ChannelState } from '../../src/channel/index.js';

/**
 * The 24-hour customer-service window: the time of each person's last inbound message, kept in
 * the channel state (shared by every process), written by the listener, read before each reply.
 */
const key = (address: string) => `last-inbound:${address}`;

export async function noteInbound(state: ChannelState, address: string, at: Date): Promise<void> {
  await state.set('whatsapp', key(address), at.toISOString());
}

/** Whether a free-form message to `address` is inside the window now. */
export async function insideWindow(state: ChannelState, address: string, windowMs: number, now = Date.now()): Promise<boolean> {
  const last = await state.get<string>('whatsapp', key(address));
  if (!last) return false;
  return now - Date.parse(last) < windowMs;
}
