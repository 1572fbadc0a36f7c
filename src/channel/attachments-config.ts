import { z } from 'zod';

/** attachments: how files that come with a chat message are taken (see src/channel/image-attachment.ts). */
export const attachmentsSchema = z
  .object({
    /** The largest image a channel downloads and shows the model, in bytes; a larger one is named with a note instead. */
    maxImageBytes: z
      .number()
      .int()
      .positive()
      .max(50 * 1024 * 1024)
      .default(5 * 1024 * 1024),
  })
  .strict()
  .default({ maxImageBytes: 5 * 1024 * 1024 });
