import { createHash } from 'node:crypto'
import { percentDecodeStrict, percentEncode } from '../codec/percent.js'
import { decodeBase64Strict, decodeHexStrict, encodeBase64, encodeHex } from '../codec/rfc4648.js'
import { canonicalBytes, type PipelineValue, parseJsonBytes, toBytes } from './value.js'

/** Pipeline operation names (SPEC 2.2), in documentation order. */
export const OPERATION_TYPES = [
  'base64_encode',
  'base64_decode',
  'hex_encode',
  'hex_decode',
  'url_encode',
  'url_decode',
  'json_parse',
  'json_canonicalize',
  'sha256',
  'sha512',
] as const

/** One pipeline operation name. */
export type OperationType = (typeof OPERATION_TYPES)[number]

/** What an operation takes: bytes (a JSON value is canonicalised first) or a JSON value. */
export interface Operation {
  input: 'bytes' | 'json'
  apply(current: PipelineValue): PipelineValue
}

function bytes(apply: (input: Uint8Array) => Uint8Array): Operation {
  return { input: 'bytes', apply: (current) => ({ kind: 'bytes', bytes: apply(toBytes(current)) }) }
}

function ascii(text: string): Uint8Array {
  return Buffer.from(text, 'latin1')
}

// Decoders read bytes; latin1 maps each byte to one char, so char offsets are byte offsets.
function latin1(input: Uint8Array): string {
  return Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('latin1')
}

/** Every operation, keyed by name. Adding one is one entry here plus its name above. */
export const operations: Record<OperationType, Operation> = {
  base64_encode: bytes((input) => ascii(encodeBase64(input))),
  base64_decode: bytes((input) => decodeBase64Strict(latin1(input), 'byte').bytes),
  hex_encode: bytes((input) => ascii(encodeHex(input))),
  hex_decode: bytes((input) => decodeHexStrict(latin1(input), 'byte')),
  url_encode: bytes((input) => ascii(percentEncode(input))),
  url_decode: bytes((input) => percentDecodeStrict(input)),
  json_parse: {
    input: 'bytes',
    apply: (current) => ({ kind: 'json', value: parseJsonBytes(toBytes(current)) }),
  },
  json_canonicalize: {
    input: 'json',
    apply: (current) => ({
      kind: 'bytes',
      bytes: canonicalBytes(
        current.kind === 'json' ? current.value : parseJsonBytes(current.bytes),
      ),
    }),
  },
  sha256: bytes((input) => ascii(createHash('sha256').update(input).digest('hex'))),
  sha512: bytes((input) => ascii(createHash('sha512').update(input).digest('hex'))),
}
