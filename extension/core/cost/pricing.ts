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
  /**
   * The price of an input token written to the provider's prompt cache (the catalog's `input_cache_write`); null when
   * not given or 0 (a write is then priced as a prompt token: an upper bound, never a free write).
   */
  cacheWriteMicroUsd?: number | null;
  /**
   * The price of a reasoning token (the catalog's `internal_reasoning`); null when not given or 0 (reasoning is then
   * priced as output, which is how providers bill it when they publish no price of its own).
   */
  reasoningMicroUsd?: number | null;
}

/** The token counts an attempt's cost is priced from (engines/types.ts UsageReport), with what the engine said. */
export interface PricedUsage {
  /** The CLI's own cost, micro-USD; when given it is the cost. */
  costMicroUsd: number | null;
  tokensIn: number | null;
  tokensOut: number | null;
  /** Input tokens read from the prompt cache, known to be part of tokensIn (EngineSpec.cachedInInput); null otherwise. */
  cachedInInput?: number | null;
  /** Input tokens written to the prompt cache, part of tokensIn (UsageReport.tokensCacheWrite); null when not reported. */
  cacheWriteInInput?: number | null;
  /** Reasoning tokens, part of tokensOut (UsageReport.tokensReasoning); null when not reported. */
  reasoningInOutput?: number | null;
}

/** The catalog's price of `model` (see findModel for how ids match); null when unlisted or priced variably. */
export function priceOf(models: readonly OpenRouterModel[], model: string | null): ModelPrice | null {
  if (!model) return null;
  const m = findModel(models, model);
  if (!m) return null;
  const p = microUsdPerToken(m.pricing.prompt);
  const c = microUsdPerToken(m.pricing.completion);
  const priced = (field: unknown): number | null => (typeof field === 'string' ? microUsdPerToken(field) : null);
  const apart = (field: unknown): number | null => {
    const v = priced(field);
    return v === null || v === 0 ? null : v;
  };
  if (p === null || c === null) return null;
  return {
    id: m.id,
    promptMicroUsd: p,
    completionMicroUsd: c,
    contextLength: m.context_length ?? null,
    cacheReadMicroUsd: priced(m.pricing.input_cache_read),
    cacheWriteMicroUsd: apart(m.pricing.input_cache_write),
    reasoningMicroUsd: apart(m.pricing.internal_reasoning),
  };
}

/**
 * The cost of one attempt in integer micro-USD (the eval row's cost, and what the budget counts): the CLI's own report
 * when it gave one, else priced from the catalog, else null (unknown is never 0). From the catalog, each part of the
 * input and output at its own price where the catalog gives one (OpenRouter's `pricing`):
 * - input read from the prompt cache (`cachedInInput`, known to be part of tokensIn) at `input_cache_read`,
 * - input written to the prompt cache (`cacheWriteInInput`) at `input_cache_write`,
 * - the rest of tokensIn at `prompt`;
 * - reasoning tokens (`reasoningInOutput`, part of tokensOut) at `internal_reasoning`,
 * - the rest of tokensOut at `completion`.
 * A part the catalog gives no price for (or whose count is unknown, or larger than what it is a part of: a forged
 * line) is priced with the rest (an upper bound for cache reads and writes; reasoning is billed as output).
 */
export function attemptCostMicroUsd(usage: PricedUsage, price: ModelPrice | null): number | null {
  if (usage.costMicroUsd !== null) return usage.costMicroUsd;
  const { tokensIn, tokensOut } = usage;
  if (!price || tokensIn === null || tokensOut === null) return null;
  const part = (count: number | null | undefined, partPrice: number | null | undefined, of: number): number =>
    count != null && partPrice != null && count >= 0 && count <= of ? count : 0;
  const cached = part(usage.cachedInInput, price.cacheReadMicroUsd, tokensIn);
  const written = part(usage.cacheWriteInInput, price.cacheWriteMicroUsd, tokensIn - cached);
  const reasoning = part(usage.reasoningInOutput, price.reasoningMicroUsd, tokensOut);
  return Math.round(
    (tokensIn - cached - written) * price.promptMicroUsd +
      cached * (price.cacheReadMicroUsd ?? 0) +
      written * (price.cacheWriteMicroUsd ?? 0) +
      (tokensOut - reasoning) * price.completionMicroUsd +
      reasoning * (price.reasoningMicroUsd ?? 0),
  );
}

/** micro-USD → "$1.234567" (six decimals: exact for integer micro-USD). */
export function formatUsd(microUsd: number): string {
  return `$${(microUsd / 1_000_000).toFixed(microUsd % 10_000 === 0 ? 2 : 6)}`;
}
