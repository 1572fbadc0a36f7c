// The REST client is shared by the sms and whatsapp channels (channels/twilio/client.ts).
import { type MessagesApi, twilioMessages } from '../twilio/client.js';
import type { SmsConfig } from './config.js';

export type { ListedMessage } from '../twilio/client.js';
export type MessageSender = MessagesApi;

export const twilioSender = (cfg: SmsConfig): MessageSender => twilioMessages(cfg);
