import type { DeliveryRepository } from '../adapters/store/ports/deliveries.js';
import { LeaseLostError } from '../kernel/lease-lost.js';
import type { LeaseGuard } from './turn/lease-guard.js';

/**
 * The deliveries a channel records for one turn attempt, fenced: a record of
 * this turn is written only while the drain's lease holds here, and in the store
 * only while the turn row is still at this attempt (a newer attempt took over).
 * A fenced-out record throws LeaseLostError (the channel logs it); records of
 * other keys (an SMS opt-out) go through as they are.
 */
export function fencedDeliveries(deliveries: DeliveryRepository, turnId: string, attempt: number, guard: LeaseGuard): DeliveryRepository {
  return {
    get: (...a) => deliveries.get(...a),
    forTurn: (...a) => deliveries.forTurn(...a),
    deadLetter: (...a) => deliveries.deadLetter(...a),
    deadLetters: (...a) => deliveries.deadLetters(...a),
    record: async (id, channel, target, fields) => {
      if (id !== turnId) return deliveries.record(id, channel, target, fields);
      if (!guard.check()) throw new LeaseLostError(`not recording delivery ${channel}/${target} of turn ${turnId}: the lease is lost`);
      return deliveries.record(id, channel, target, { ...fields, attempt });
    },
  };
}
