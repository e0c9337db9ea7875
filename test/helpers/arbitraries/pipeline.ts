// Test-only (excluded from the build): pipelines for the fuzzers.
import fc from 'fast-check'
import { MAX_OPERATIONS } from '../../../src/tools/pipeline/index.js'
import { OPERATION_TYPES, type OperationType } from '../../../src/tools/pipeline/ops.js'
import { bytes, jsonValue, text } from './common.js'

/** Initial values: text, encoded text (so decoders have something to decode), or JSON values. */
const input = fc.oneof(
  text,
  bytes.map((b) => Buffer.from(b).toString('base64')),
  bytes.map((b) => Buffer.from(b).toString('hex')),
  text.map((t) => encodeURIComponent(t)),
  jsonValue.map((v) => JSON.stringify(v)),
  jsonValue,
  fc.constantFrom(
    '1e400',
    '-0',
    '9007199254740993',
    '{"a":1,"a":2}',
    '{"__proto__":{"x":1}}',
    '\uFEFF{}',
  ),
)

/** Steps that usually succeed on each other's output: an encoder followed by its decoder. */
const PAIRS: OperationType[][] = [
  ['base64_encode', 'base64_decode'],
  ['hex_encode', 'hex_decode'],
  ['url_encode', 'url_decode'],
  ['json_canonicalize', 'json_parse'],
  ['sha256'],
  ['sha512', 'hex_decode'],
]

const operations = fc.oneof(
  fc.array(fc.constantFrom(...OPERATION_TYPES), { minLength: 1, maxLength: MAX_OPERATIONS }),
  fc
    .array(fc.constantFrom(...PAIRS), { minLength: 1, maxLength: MAX_OPERATIONS / 2 })
    .map((pairs) => pairs.flat()),
)

/** Valid request bodies of POST /pipeline. */
export const validInputs = fc.record({
  input,
  operations: operations.map((types) => types.map((type) => ({ type }))),
})
