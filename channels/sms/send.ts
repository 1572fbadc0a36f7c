// Moved to channels/twilio/ (shared by the sms and whatsapp channels).
export * from '../twilio/send.js';

/** Twilio errors that mean "this recipient will not get it" (logged, recorded, not retried). */
export const UNSUBSCRIBED = 21610;
