/**
 * The OpenRouter models format (GET https://openrouter.ai/api/v1/models): `{"data": [model, …]}` where each model
 * has `id`, `pricing.prompt` / `pricing.completion` as decimal strings in USD per token, `context_length`, and
 * `architecture.modality` ("text->text") / `input_modalities` / `output_modalities`. Other fields are kept as given.
 */
export interface OpenRouterModel {
  id: string;
  name?: string;
  context_length: number | null;
  pricing: { prompt: string; completion: string; [k: string]: unknown };
  architecture?: { modality?: string; input_modalities?: string[]; output_modalities?: string[]; [k: string]: unknown };
  [k: string]: unknown;
}

/** A catalog file that is not in the OpenRouter models format; the message names the field. */
export class CatalogShapeError extends Error {
  override name = 'CatalogShapeError';
}

/**
 * Checks that `value` is in the OpenRouter models format and returns its models.
 * @param where names the source in messages (a file path or URL)
 * @throws CatalogShapeError naming the source and the field (`data[3].pricing.prompt`) of the first problem
 */
export function parseCatalog(value: unknown, where: string): OpenRouterModel[] {
  const fail = (field: string, msg: string): never => {
    throw new CatalogShapeError(
      `${where}: ${field}: ${msg} (expected the OpenRouter models format: {"data": [{"id", "pricing": {"prompt", "completion"}, "context_length", …}]})`,
    );
  };
  if (!value || typeof value !== 'object' || Array.isArray(value)) fail('(top level)', 'must be a JSON object');
  const data = (value as { data?: unknown }).data;
  if (!Array.isArray(data)) return fail('data', 'must be an array of models');
  const seen = new Set<string>();
  data.forEach((m: unknown, i) => {
    const at = `data[${i}]`;
    if (!m || typeof m !== 'object' || Array.isArray(m)) fail(at, 'must be an object');
    const o = m as Record<string, unknown>;
    if (typeof o.id !== 'string' || !o.id) fail(`${at}.id`, 'must be a non-empty string');
    if (seen.has(o.id as string)) fail(`${at}.id`, `"${o.id}" appears twice`);
    seen.add(o.id as string);
    if (o.context_length !== null && o.context_length !== undefined && !(typeof o.context_length === 'number' && o.context_length >= 0)) {
      fail(`${at}.context_length`, 'must be a number ≥ 0 or null');
    }
    const p = o.pricing as Record<string, unknown> | undefined;
    if (!p || typeof p !== 'object') return fail(`${at}.pricing`, 'must be an object');
    for (const k of ['prompt', 'completion']) {
      if (typeof p[k] !== 'string' || !Number.isFinite(Number(p[k])) || (p[k] as string).trim() === '')
        fail(`${at}.pricing.${k}`, 'must be a decimal string (USD per token)');
    }
    const a = o.architecture;
    if (a !== undefined && (typeof a !== 'object' || a === null)) fail(`${at}.architecture`, 'must be an object');
  });
  return data as OpenRouterModel[];
}

/**
 * A price per token in micro-USD (USD × 1,000,000, which is also USD per million tokens); null when unknown or variable
 * (OpenRouter writes -1). Rounded to 12 significant digits: the catalog's decimal strings are exact, and the binary
 * product is not ("0.0000002" × 1e6 is 0.19999999999999998, which `verdict catalog` printed as a price).
 */
export function microUsdPerToken(usdPerToken: string): number | null {
  const v = Number(usdPerToken);
  return Number.isFinite(v) && v >= 0 ? Number((v * 1_000_000).toPrecision(12)) : null;
}

/** True when both prompt and completion are priced 0. */
export function isFree(m: OpenRouterModel): boolean {
  return Number(m.pricing.prompt) === 0 && Number(m.pricing.completion) === 0;
}

/** Text in, text out only: input_modalities = output_modalities = [text], else `architecture.modality` "text->text". */
export function isTextToText(m: OpenRouterModel): boolean {
  const a = m.architecture;
  if (!a) return false;
  if (a.input_modalities && a.output_modalities) {
    return a.input_modalities.length === 1 && a.input_modalities[0] === 'text' && a.output_modalities.length === 1 && a.output_modalities[0] === 'text';
  }
  return a.modality === 'text->text';
}

/**
 * The catalog model a row's model id means: the same id, else the one whose id ends with `/<model>` or that the
 * model ends with (`openrouter/openai/gpt-5` and `gpt-5` both find `openai/gpt-5`) when exactly one does.
 */
export function findModel(models: readonly OpenRouterModel[], model: string): OpenRouterModel | null {
  const exact = models.find((m) => m.id === model);
  if (exact) return exact;
  const near = models.filter((m) => m.id.endsWith(`/${model}`) || model.endsWith(`/${m.id}`));
  return near.length === 1 ? (near[0] as OpenRouterModel) : null;
}
