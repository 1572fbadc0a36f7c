// The REST client is shared by the sms and whatsapp channels (channels/twilio/client.ts).
import { type MessagesApi, type OutgoingMessage, twilioMessages } from '../twilio/client.js';
import type { WhatsAppConfig } from './config.js';

/** One create: free-form (Body) or a Content API template (ContentSid, ContentVariables). */
export type WhatsAppMessage = OutgoingMessage;
export type WhatsAppSender = MessagesApi;

export const twilioWhatsAppSender = (cfg: WhatsAppConfig): WhatsAppSender => twilioMessages(cfg);
