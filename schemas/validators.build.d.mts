// Types of schemas/validators.build.mjs (plain JS: esbuild.mjs imports it).
/** Export name → schema file in schemas/. */
export declare const SCHEMAS: Record<string, string>;
/** The date-time format of eval rows (ISO 8601 with a zone). */
export declare const DATE_TIME: RegExp;
/** The generated module's text (`js`) and its declarations (`dts`). @throws Error when a schema does not compile */
export declare function generateValidators(): { js: string; dts: string };
/** Absolute paths of the generated files. */
export declare const GENERATED: { js: string; dts: string };
/** Writes the generated files when their text changed. */
export declare function writeValidators(): void;
