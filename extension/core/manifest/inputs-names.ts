/** The most members an anonymous input scope names (one capital letter each: docs/workflows.md "Inputs"). */
export const MAX_ANONYMOUS = 26;
