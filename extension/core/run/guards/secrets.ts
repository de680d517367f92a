/**
 * Guard `secrets`: credentials in lines the worker added. Each rule is a provider's documented token shape, so a
 * match is almost never anything else; the one generic rule needs a secret-like name, a long value that mixes
 * upper case, lower case and digits, high entropy, and no placeholder word. A finding never repeats the secret (it
 * goes into eval rows and retry prompts): only the rule and the first characters.
 *
 * Shapes: AWS access key ids (IAM "Unique identifiers": AKIA/ASIA… + 16 base-32 characters; AWS's documented
 * example keys ending in EXAMPLE are left alone), PEM private key blocks (RFC 7468 labels), GitHub tokens (GitHub
 * docs "About authentication: token formats": ghp_/gho_/ghu_/ghs_/ghr_, github_pat_), OpenAI (`sk-proj-`,
 * `sk-svcacct-`, `sk-admin-`, and the legacy `T3BlbkFJ` infix), Anthropic (`sk-ant-api03-`, `sk-ant-admin01-`), Slack
 * (`xoxb-`/`xoxp-`/… tokens, incoming-webhook URLs), Stripe live keys, Google API keys (`AIza`), GitLab personal
 * tokens (`glpat-`), npm tokens (`npm_`).
 */
import type { GuardFinding, Line } from './types';

interface SecretRule {
  id: string;
  what: string;
  re: RegExp;
  /** A match that is a documented placeholder, not a secret. */
  skip?: (match: string) => boolean;
}

const RULES: SecretRule[] = [
  {
    id: 'aws-access-key',
    what: 'an AWS access key id',
    re: /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[A-Z2-7]{16}\b/g,
    skip: (m) => m.endsWith('EXAMPLE'),
  },
  {
    id: 'aws-secret-key',
    what: 'an AWS secret access key',
    re: /aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/gi,
    skip: (m) => /EXAMPLEKEY/.test(m),
  },
  { id: 'private-key', what: 'a private key', re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g },
  { id: 'github-token', what: 'a GitHub token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b/g },
  { id: 'anthropic-key', what: 'an Anthropic API key', re: /\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{80,}/g },
  { id: 'openai-key', what: 'an OpenAI API key', re: /\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b/g },
  { id: 'slack-token', what: 'a Slack token', re: /\bxox[abposr]-[0-9]{6,}-[0-9A-Za-z-]{10,}/g },
  { id: 'slack-webhook', what: 'a Slack webhook URL', re: /https:\/\/hooks\.slack\.com\/services\/T[A-Z0-9]{6,}\/B[A-Z0-9]{6,}\/[A-Za-z0-9]{20,}/g },
  { id: 'stripe-key', what: 'a Stripe live key', re: /\b[sr]k_live_[0-9A-Za-z]{20,}\b/g },
  { id: 'google-api-key', what: 'a Google API key', re: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g },
  { id: 'gitlab-token', what: 'a GitLab token', re: /\bglpat-[0-9A-Za-z_-]{20,}/g },
  { id: 'npm-token', what: 'an npm token', re: /\bnpm_[A-Za-z0-9]{36}\b/g },
];

/**
 * The generic rule: `<name> = "<value>"` (or `:`), where the name contains secret, token, api key, password,
 * passwd, credential, private key or access key, and the quoted value is 24+ characters without spaces, mixes upper
 * case, lower case and digits, has a Shannon entropy of at least GENERIC_MIN_ENTROPY bits per character, and holds
 * no placeholder word (example, sample, dummy, fake, test, your, xxx, changeme, placeholder, redacted) and no
 * interpolation (`$`, `{`, `<`, `%`).
 */
const GENERIC =
  /\b[\w.-]*(?:secret|token|api[_-]?key|apikey|passw(?:or)?d|credential|private[_-]?key|access[_-]?key)[\w.-]*["']?\s*(?::=|=>|[:=])\s*["'`]([^"'`\s]{24,})["'`]/gi;
/** Bits per character a generic secret's value must reach (a random base64 or alphanumeric string of 24+ is above 4). */
export const GENERIC_MIN_ENTROPY = 3.7;
const PLACEHOLDER = /example|sample|dummy|fake|test|your|xxx|changeme|placeholder|redacted|[${}<>%]/i;

/** Secrets in `lines` (the lines the worker added to `file`), one finding per rule and line. */
export function findSecrets(file: string, lines: readonly Line[]): GuardFinding[] {
  const out: GuardFinding[] = [];
  for (const { line, text } of lines) {
    const seen = new Set<string>();
    for (const rule of RULES) {
      for (const m of text.matchAll(rule.re)) {
        if (rule.skip?.(m[0]) || seen.has(rule.id)) continue;
        seen.add(rule.id);
        out.push({
          guard: 'secrets',
          file,
          line,
          message: `${rule.what} (${redact(m[0])}); secrets do not belong in the work — read it from the environment instead`,
        });
      }
    }
    if (seen.size) continue;
    for (const m of text.matchAll(GENERIC)) {
      const value = m[1] ?? '';
      if (!looksRandom(value)) continue;
      out.push({
        guard: 'secrets',
        file,
        line,
        message: `a hard-coded secret (${redact(value)}, assigned to a secret-like name); read it from the environment instead`,
      });
      break;
    }
  }
  return out;
}

/** A value that is most likely a real secret, not a word, a path, a hash or a placeholder. */
function looksRandom(value: string): boolean {
  if (PLACEHOLDER.test(value)) return false;
  if (!/[a-z]/.test(value) || !/[A-Z]/.test(value) || !/[0-9]/.test(value)) return false;
  return entropy(value) >= GENERIC_MIN_ENTROPY;
}

/** Shannon entropy of `s`, bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

/** The first characters of a secret and its length: enough to find it, not enough to use it. */
function redact(secret: string): string {
  return `${secret.slice(0, Math.min(6, Math.floor(secret.length / 4)))}… ${secret.length} characters`;
}
