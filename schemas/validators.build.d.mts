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
/**
 * The schema VS Code's JSON language service is given for manifests: `schema` with every keyword that judges a value
 * left out (completion, hover and snippets only); enum and const become examples, oneOf anyOf.
 */
export declare function forTheEditor(schema: unknown, id: string): Record<string, unknown>;
/** Where the editor's manifest schema comes from and goes (generated/<file>), and its $id. */
export declare const EDITOR_SCHEMA: { from: string; file: string; id: string };
/** The editor schema's text as written into schemas/generated/. */
export declare function editorSchemaText(): string;
/** Writes the generated files (validators and the editor schema) when their text changed. */
export declare function writeValidators(): void;
