// `npm run lint`: typescript-eslint with type information, a few rules that each catch a real class of bug (not
// style: Prettier owns that, `npm run format:check`). Runs in `npm test` before the tiers.
import { createRequire } from 'node:module';

// typescript-eslint needs TypeScript's JavaScript API, which TypeScript 7 lacks: load TypeScript 6 for it.
createRequire(import.meta.url)('./typescript-6.cjs');
const { default: tseslint } = await import('typescript-eslint');

/** Rules without type information, for every file: each a mistake the type-checker does not see. */
const jsRules = {
  // `return`/`throw` in a finally replaces the try's own result or error, silently.
  'no-unsafe-finally': 'error',
  // An async executor's throw does not reject the promise it builds: the promise never settles.
  'no-async-promise-executor': 'error',
};

/** Node's globals for the plain-JavaScript build scripts (ESLint has no environments any more). */
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'require',
    'module',
    '__dirname',
    '__filename',
    'globalThis',
    'structuredClone',
    'TextEncoder',
    'TextDecoder',
    'AbortController',
    'fetch',
    'queueMicrotask',
    'setImmediate',
    'clearImmediate',
    'performance',
  ].map((g) => [g, 'readonly']),
);

export default tseslint.config(
  {
    ignores: ['dist/**', 'out/**', 'node_modules/**', 'schemas/generated/**', 'test/fixtures/**', 'test/integration/host/**', '.vscode-test/**'],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        project: ['./tsconfig.json', './webview/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits or catches: its rejection is unhandled (Node ends the process) and its ordering lost.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a boolean or a void callback is expected: `if (p)` is always true; an async listener's
      // rejection goes nowhere.
      '@typescript-eslint/no-misused-promises': 'error',
      // `await` of something that is not a promise: usually a forgotten call or a wrong function.
      '@typescript-eslint/await-thenable': 'error',
      // Dead code: a variable, import or parameter nobody reads (tsc's noUnusedLocals misses parameters and
      // destructured rest siblings). A leading underscore marks one kept on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // A switch over a union that misses a member: adding a status or a kind must fail here, not fall through (a `default:`
      // does not count as covering the members it would hide).
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // `return promise` inside try: its rejection skips the catch and the finally runs before it settles.
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      ...jsRules,
    },
  },
  {
    // The build scripts (esbuild.mjs, schemas/validators.build.mjs, …) are outside any tsconfig: rules without types.
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: { globals: { ...nodeGlobals } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      'no-undef': 'error',
      ...jsRules,
    },
  },
);
