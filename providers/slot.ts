import type { Api, Model } from '@mariozechner/pi-ai';

/** One provider slot of the fallback chain: a model and where its key comes from. */
export interface ProviderSlot {
  id: string;
  model: Model<Api>;
  /** Name of the environment variable holding the key (shown by doctor, never the key). */
  apiKeyEnv?: string;
  apiKey?: string;
}

/** Where the provider stands, for doctor and /readyz. */
export interface ProviderStatus {
  configured: boolean;
  /** Why not, in words a user can act on. */
  reason?: string;
  slots: Array<{ id: string; api: string; model: string; baseUrl: string; keyPresent: boolean; keyEnv?: string }>;
}
