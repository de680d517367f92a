// Types of schemas/validators.build.mjs (plain JS: esbuild.mjs imports it).
/** Export name → schema file in schemas/. */
export declare const SCHEMAS: Record<string, string>;
/** The date-time format of eval rows (ISO 8601 with a zone). */
export declare const DATE_TIME: RegExp;
/** A copy of a schema without its annotation keywords (title, description, examples, default, $comment). */
export declare function withoutAnnotations(schema: unknown): unknown;
/** Each generated module's text (`js`) and declarations (`dts`), by export name. @throws Error when a schema does not compile */
export declare function generateValidators(): Record<string, { js: string; dts: string }>;
/** Absolute path of schemas/generated/, which holds <export name>.js and .d.ts. */
export declare const GENERATED_DIR: string;
/** Writes the generated files when their text changed. */
export declare function writeValidators(): void;
