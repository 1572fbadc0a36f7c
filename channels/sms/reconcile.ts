// Moved to channels/twilio/ (shared by the sms and whatsapp channels).
export * from '../twilio/reconcile.js';
