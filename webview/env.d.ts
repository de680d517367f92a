// Module shapes the bundler (esbuild.mjs) handles and TypeScript cannot see.

/** A stylesheet imported for its side effect: esbuild emits it as dashboard.css. */
declare module '*.css';
