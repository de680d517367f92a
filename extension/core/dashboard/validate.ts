import Ajv, { type JSONSchemaType, type ValidateFunction } from 'ajv';
import { RUN_ACTIONS, SAFE_ID, TASK_ACTIONS, type PageToHost } from '../../../schemas/protocol';

// One JSON Schema per message type; additionalProperties false, so an unknown field is as wrong as an unknown type.
const id = { type: 'string', pattern: SAFE_ID.source } as const;
const seq = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const schemas: Record<PageToHost['type'], object> = {
  ready: { type: 'object', properties: { type: { const: 'ready' } }, required: ['type'], additionalProperties: false },
  'select-run': {
    type: 'object',
    properties: { type: { const: 'select-run' }, runId: { anyOf: [id, { type: 'null' }] } },
    required: ['type', 'runId'],
    additionalProperties: false,
  },
  'load-artifact': {
    type: 'object',
    properties: {
      type: { const: 'load-artifact' },
      seq,
      runId: id,
      artifact: { enum: ['manifest', 'prompt', 'check-output', 'worker-log'] },
      key: id,
      attempt: { type: 'integer', minimum: 1, maximum: 10000 },
    },
    required: ['type', 'seq', 'runId', 'artifact'],
    additionalProperties: false,
    // Every kind but the frozen manifest names one attempt of one task.
    if: { properties: { artifact: { not: { const: 'manifest' } } } },
    then: { required: ['key', 'attempt'] },
  },
  'load-scoreboard': { type: 'object', properties: { type: { const: 'load-scoreboard' }, seq }, required: ['type', 'seq'], additionalProperties: false },
  'task-action': {
    type: 'object',
    properties: { type: { const: 'task-action' }, seq, runId: id, key: id, action: { enum: [...TASK_ACTIONS] } },
    required: ['type', 'seq', 'runId', 'key', 'action'],
    additionalProperties: false,
  },
  'run-action': {
    type: 'object',
    properties: { type: { const: 'run-action' }, seq, runId: id, action: { enum: [...RUN_ACTIONS] } },
    required: ['type', 'seq', 'runId', 'action'],
    additionalProperties: false,
  },
};

let validators: Map<string, ValidateFunction<PageToHost>> | null = null;
/** The page messages' validators, compiled on first use (not at import: every CLI start loads this module). */
function pageValidators(): Map<string, ValidateFunction<PageToHost>> {
  if (!validators) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    validators = new Map(Object.entries(schemas).map(([type, schema]) => [type, ajv.compile(schema as JSONSchemaType<PageToHost>)]));
  }
  return validators;
}

/** Largest message a host accepts from a page, bytes of JSON. */
export const MAX_PAGE_MESSAGE_BYTES = 16 * 1024;

/**
 * Checks a message that came from a page (already parsed from JSON, or a webview's structured clone).
 * Returns the typed message, or why it was rejected: not an object, an unknown `type`, a missing or extra field, an
 * unsafe run id or task key. Never throws. Callers log the reason and do nothing else with the message.
 */
export function parsePageMessage(raw: unknown): { ok: true; message: PageToHost } | { ok: false; reason: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, reason: 'not a JSON object' };
  const type = (raw as { type?: unknown }).type;
  const validate = typeof type === 'string' ? pageValidators().get(type) : undefined;
  if (!validate) return { ok: false, reason: `unknown message type ${JSON.stringify(type)?.slice(0, 60) ?? 'undefined'}` };
  if (!validate(raw)) {
    const e = validate.errors?.[0];
    return {
      ok: false,
      reason: `bad "${type}" message: ${e?.instancePath || '/'} ${e?.message ?? 'invalid'}${e?.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
    };
  }
  return { ok: true, message: raw as PageToHost };
}

/** Parses and checks a message that arrived as JSON text (the browser host's POST body). Never throws. */
export function parsePageMessageText(text: string): { ok: true; message: PageToHost } | { ok: false; reason: string } {
  if (Buffer.byteLength(text) > MAX_PAGE_MESSAGE_BYTES) return { ok: false, reason: `message larger than ${MAX_PAGE_MESSAGE_BYTES} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `malformed JSON: ${(e as Error).message}` };
  }
  return parsePageMessage(raw);
}
