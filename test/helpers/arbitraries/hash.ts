// Test-only (excluded from the build): valid hash requests for the fuzzers.
import fc from 'fast-check'
import { digestAlgorithm } from '../../../src/tools/fields.js'
import { text } from './common.js'

/** Valid request bodies of POST /hash; omitted fields take their defaults. */
export const validInputs = fc.record(
  { input: text, algorithm: fc.constantFrom(...digestAlgorithm.options) },
  { requiredKeys: [] },
)
