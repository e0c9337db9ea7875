// Test-only (excluded from the build): valid hash requests for the fuzzers.
import fc from 'fast-check'
import { text } from './common.arbitrary.js'
import { digestAlgorithm } from './fields.js'

/** Valid request bodies of POST /hash; omitted fields take their defaults. */
export const validInputs = fc.record(
  { input: text, algorithm: fc.constantFrom(...digestAlgorithm.options) },
  { requiredKeys: [] },
)
