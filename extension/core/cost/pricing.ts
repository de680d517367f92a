import { findModel, microUsdPerToken, type OpenRouterModel } from '../catalog/openrouter';

/** Catalog prices of one model, micro-USD per token. */
export interface ModelPrice {
  id: string;
  promptMicroUsd: number;
  completionMicroUsd: number;
  /** tokens; null when the catalog does not say. */
  contextLength: number | null;
  /** The price of an input token read from the provider's prompt cache (the catalog's `input_cache_read`); null when not given. */
  cacheReadMicroUsd?: number | null;
}

/** The catalog's price of `model` (see findModel for how ids match); null when unlisted or priced variably. */
export function priceOf(models: readonly OpenRouterModel[], model: string | null): ModelPrice | null {
  if (!model) return null;
  const m = findModel(models, model);
  if (!m) return null;
  const p = microUsdPerToken(m.pricing.prompt);
  const c = microUsdPerToken(m.pricing.completion);
  const cacheRead = typeof m.pricing.input_cache_read === 'string' ? microUsdPerToken(m.pricing.input_cache_read) : null;
  return p === null || c === null ? null : { id: m.id, promptMicroUsd: p, completionMicroUsd: c, contextLength: m.context_length ?? null, cacheReadMicroUsd: cacheRead };
}

/**
 * The cost of one attempt in integer micro-USD (the eval row's cost, and what the budget counts): the CLI's own report
 * when it gave one, else tokens in × prompt price + tokens out × completion price from the catalog, else null. Unknown
 * is never 0. `cachedInInput`: input tokens read from the prompt cache, known to be part of tokensIn
 * (EngineSpec.cachedInInput); when the catalog gives a cache-read price they are priced at it and the rest of tokensIn
 * at the prompt price. Otherwise cached input is priced as prompt tokens (an upper bound). Cache writes and reasoning
 * are priced as prompt and completion tokens.
 */
export function attemptCostMicroUsd(reported: number | null, tokensIn: number | null, tokensOut: number | null, price: ModelPrice | null, cachedInInput: number | null = null): number | null {
  if (reported !== null) return reported;
  if (!price || tokensIn === null || tokensOut === null) return null;
  const cached = cachedInInput !== null && price.cacheReadMicroUsd != null && cachedInInput <= tokensIn ? cachedInInput : 0;
  return Math.round((tokensIn - cached) * price.promptMicroUsd + cached * (price.cacheReadMicroUsd ?? 0) + tokensOut * price.completionMicroUsd);
}

/** micro-USD → "$1.234567" (six decimals: exact for integer micro-USD). */
export function formatUsd(microUsd: number): string {
  return `$${(microUsd / 1_000_000).toFixed(microUsd % 10_000 === 0 ? 2 : 6)}`;
}
