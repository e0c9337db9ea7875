import type { Parameters } from 'fast-check'

/**
 * Runs per property for the tool `run` fuzzing, from `FUZZ_RUNS` (default 1,000, what `npm test`
 * runs; `npm run fuzz` sets 10,000). Every other property scales its own CI count by the same
 * factor, so one variable turns the whole suite up.
 */
export const FUZZ_RUNS = readPositiveInt('FUZZ_RUNS', 1000)

/** The factor `npm run fuzz` applies to every CI count: `FUZZ_RUNS / 1000`. */
export const FUZZ_SCALE = FUZZ_RUNS / 1000

/**
 * The fast-check seed of every property in this process: `FUZZ_SEED`, or a fresh random 32-bit
 * integer. Printed with each property so that a failure can be replayed with
 * `FUZZ_SEED=<seed> FUZZ_RUNS=<runs>`.
 */
export const FUZZ_SEED = readSeed()

function readPositiveInt(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`)
  }
  return value
}

function readSeed(): number {
  const raw = process.env.FUZZ_SEED
  if (raw === undefined || raw === '') return (Math.random() * 2 ** 32) | 0
  const value = Number(raw)
  if (!Number.isSafeInteger(value)) {
    throw new Error(`FUZZ_SEED must be an integer, got ${JSON.stringify(raw)}`)
  }
  return value | 0
}

/**
 * The run count of a property whose CI count is `ciRuns`: `ciRuns * FUZZ_SCALE`, at least 1.
 *
 * @example scaledRuns(200) // 200 under npm test, 2000 under npm run fuzz
 */
export function scaledRuns(ciRuns: number): number {
  return Math.max(1, Math.round(ciRuns * FUZZ_SCALE))
}

/**
 * fast-check parameters for one property, with the shared seed; prints the property's name, run
 * count and seed, so that every fuzz run says what it did and how to replay it.
 *
 * @example fc.assert(fc.property(arb, check), fuzzParameters('hash run', FUZZ_RUNS))
 */
export function fuzzParameters<T>(name: string, numRuns: number): Parameters<T> {
  console.log(
    `[fuzz] ${name}: ${numRuns} runs, seed ${FUZZ_SEED} (replay: FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS})`,
  )
  return { numRuns, seed: FUZZ_SEED }
}

/**
 * Vitest timeout of a fuzz test whose CI budget is `ciMs`, scaled like its runs (milliseconds).
 *
 * @example it('…', fuzzTest, fuzzTimeout(20_000))
 */
export function fuzzTimeout(ciMs: number): number {
  return Math.round(ciMs * Math.max(1, FUZZ_SCALE))
}
