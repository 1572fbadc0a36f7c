import type { Api, Model } from '@mariozechner/pi-ai';

/**
 * pi-ai's model catalog (getModel) without the rest of pi-ai: the package's entry also loads
 * typebox, some 700 modules, which were most of what `switchboard doctor` spent starting up.
 * The package exports no path for the catalog alone, so its file is imported by URL, beside the
 * entry (the same file, so the same module, the entry itself uses); should that file not be there
 * (another layout), the entry is imported instead.
 */
type GetModel = (provider: string, id: string) => Model<Api> | undefined;

async function loadCatalog(): Promise<GetModel> {
  try {
    const entry = import.meta.resolve('@mariozechner/pi-ai');
    const m = (await import(new URL('./models.js', entry).href)) as { getModel?: GetModel };
    if (typeof m.getModel === 'function') return m.getModel;
  } catch {
    // Not resolvable this way (another layout, or a loader without import.meta.resolve): the whole package below.
  }
  return (await import('@mariozechner/pi-ai')).getModel as GetModel;
}

// Loaded on the first lookup, not at import: a configuration that names no catalog model (no provider,
// or an OpenAI-compatible server) never parses the catalog's 550 KB.
let catalog: Promise<GetModel> | undefined;

/** The model pi-ai's catalog has under this provider and id, or undefined. */
export async function catalogModel(provider: string, id: string): Promise<Model<Api> | undefined> {
  const getModel = await (catalog ??= loadCatalog());
  try {
    return getModel(provider, id);
  } catch {
    return undefined;
  }
}
