/**
 * A seeded random source for routing (scoreboard/route.ts): the same seed gives the same numbers on every machine, so
 * a run's choices can be replayed from the seed its rows record. Not for secrets.
 */

/** Numbers in [0, 1), one per call. */
export type RandomSource = () => number;

/**
 * The 128-bit state of {@link seededRandom} from a string: cyrb128 (a public-domain string hash by bryc, four
 * 32-bit lanes mixed with Math.imul).
 */
function cyrb128(text: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

/**
 * A seeded source of numbers in [0, 1): sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 32-bit lanes,
 * as in PractRand) seeded by the string's cyrb128 hash, with 12 warm-up rounds. Same seed, same sequence.
 */
export function seededRandom(seed: string): RandomSource {
  let [a, b, c, d] = cyrb128(seed);
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

/** A standard normal draw (Box–Muller, one of the pair), from two uniforms of `random`. */
function normal(random: RandomSource): number {
  const u = 1 - random(); // (0, 1]: log(0) is never taken
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/**
 * A Gamma(shape, 1) draw for shape ≥ 1 by Marsaglia and Tsang's method ("A simple method for generating gamma
 * variables", ACM TOMS 26(3), 2000): squeeze test first, then the log test.
 */
function gamma(shape: number, random: RandomSource): number {
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - random();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/**
 * A Beta(a, b) draw, a and b ≥ 1 (a posterior over a pass rate with a uniform prior: 1 + passes, 1 + failures), as
 * X / (X + Y) of two Gamma draws.
 * @throws RangeError when a or b is below 1 or not finite
 */
export function betaSample(a: number, b: number, random: RandomSource): number {
  if (!(a >= 1 && b >= 1 && Number.isFinite(a) && Number.isFinite(b))) throw new RangeError(`betaSample: a and b must be ≥ 1, got ${a}, ${b}`);
  const x = gamma(a, random);
  const y = gamma(b, random);
  return x / (x + y);
}
