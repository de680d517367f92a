/**
 * Numeric limits shared by the manifest schema and the places that take the same numbers from elsewhere (the config
 * file, CLI flags, MCP arguments, the editor's settings). A module of constants only, so a command that reads the
 * config does not load the manifest's schema or validator. test/unit/numeric-ranges.unit.test.ts holds
 * schemas/manifest.schema.json to these values.
 */

/**
 * The most attempts at once (the manifest's `max_parallel.maximum`): the range 1…256 of the manifest's and the config's
 * `max_parallel`, `verdict run --max-parallel`, `verdict pool worker --slots`, the MCP start_run's `max_parallel` and
 * the editor's `verdict.maxParallel`.
 */
export const MAX_PARALLEL = 256;
