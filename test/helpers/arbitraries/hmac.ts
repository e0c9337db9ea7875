// Test-only (excluded from the build): valid hmac requests for the fuzzers.
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { digestAlgorithm, nodeDigestName } from '../../../src/tools/fields.js'
import { text } from './common.js'

const algorithm = fc.constantFrom(...digestAlgorithm.options)
const secret = text.filter((s) => s.length > 0)

/**
 * Valid request bodies of POST /hmac. `expected_hex` is the right HMAC (either case), a wrong one
 * of the right length, one of the wrong length, or absent.
 */
export const validInputs = fc
  .tuple(text, secret, algorithm, fc.constantFrom('right', 'upper', 'flipped', 'short', 'none'))
  .map(([input, key, alg, expect]) => {
    const hex = createHmac(nodeDigestName[alg], key).update(input).digest('hex')
    const body: Record<string, string> = { input, secret: key, algorithm: alg }
    if (expect === 'right') body.expected_hex = hex
    if (expect === 'upper') body.expected_hex = hex.toUpperCase()
    if (expect === 'flipped') body.expected_hex = (hex[0] === '0' ? '1' : '0') + hex.slice(1)
    if (expect === 'short') body.expected_hex = hex.slice(0, -2)
    return body
  })
