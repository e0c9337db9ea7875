import { decodeBase64Strict } from '../codec/rfc4648.js'
import { utf8DecodeStrict } from '../unicode.js'

/** Payload kinds payload-inspect can report, in tie-break order (most specific first). */
export const PAYLOAD_TYPES = ['jwt', 'json', 'hex', 'base64', 'url_encoded', 'text'] as const

/** One payload kind. */
export type PayloadType = (typeof PAYLOAD_TYPES)[number]

/** A possible reading of the payload. */
export interface Candidate {
  type: PayloadType
  /** 0..1, rounded to 2 decimals; only comparable between candidates of one payload. */
  confidence: number
  reasons: string[]
}

/** What the detectors share: the input without surrounding whitespace, and its printable ratio. */
export interface Probe {
  trimmed: string
  printableRatio: number
}

const clamp = (value: number) => Math.round(Math.min(0.99, Math.max(0.01, value)) * 100) / 100

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

function decodeSegmentJson(segment: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(segment) || segment.length % 4 === 1) return undefined
  const text = utf8DecodeStrict(Buffer.from(segment, 'base64url'))
  if (text === null) return undefined
  const parsed = parseJson(text)
  return parsed.ok ? parsed.value : undefined
}

/** JWS (3 segments) or JWE (5) whose header is base64url JSON. */
export function detectJwt({ trimmed }: Probe): Candidate | undefined {
  const token = trimmed.replace(/^bearer\s+/i, '')
  const segments = token.split('.')
  if (segments.length !== 3 && segments.length !== 5) return undefined
  if (!segments.every((s) => /^[A-Za-z0-9_-]*$/.test(s))) return undefined
  const header = decodeSegmentJson(segments[0] as string)
  if (!isJsonObject(header)) return undefined
  const reasons = [`${segments.length} base64url segments separated by dots`]
  if (token !== trimmed) reasons.push('"Bearer " prefix')
  let confidence = 0.8
  if (typeof header.alg === 'string') {
    confidence += 0.17
    reasons.push(`header decodes to JSON with alg ${JSON.stringify(header.alg)}`)
  } else {
    reasons.push('header decodes to a JSON object')
  }
  if (segments.length === 5) {
    reasons.push('5 segments: a JWE (encrypted)')
  } else if (isJsonObject(decodeSegmentJson(segments[1] as string))) {
    reasons.push('payload decodes to a JSON object')
  } else {
    confidence -= 0.3
    reasons.push('payload does not decode to a JSON object')
  }
  return { type: 'jwt', confidence: clamp(confidence), reasons }
}

/** JSON text (RFC 8259); a bare scalar is a weak signal. Parsed with JSON.parse, never evaluated. */
export function detectJson({ trimmed }: Probe): Candidate | undefined {
  if (trimmed === '') return undefined
  const first = trimmed[0]
  const parsed = parseJson(trimmed)
  if (!parsed.ok) {
    const last = trimmed[trimmed.length - 1]
    if ((first === '{' && last === '}') || (first === '[' && last === ']')) {
      return {
        type: 'json',
        confidence: 0.2,
        reasons: [`starts with ${first} and ends with ${last} but does not parse as JSON`],
      }
    }
    return undefined
  }
  const value = parsed.value
  if (Array.isArray(value)) {
    return {
      type: 'json',
      confidence: 0.98,
      reasons: [
        `parses as a JSON array of ${value.length} ${value.length === 1 ? 'item' : 'items'}`,
      ],
    }
  }
  if (isJsonObject(value)) {
    const keys = Object.keys(value).length
    return {
      type: 'json',
      confidence: 0.98,
      reasons: [`parses as a JSON object with ${keys} ${keys === 1 ? 'key' : 'keys'}`],
    }
  }
  if (typeof value === 'string') {
    return { type: 'json', confidence: 0.6, reasons: ['parses as a JSON string literal'] }
  }
  return {
    type: 'json',
    confidence: 0.3,
    reasons: [`parses as a bare JSON ${value === null ? 'null' : typeof value}`],
  }
}

/** Hexadecimal digits, optionally 0x-prefixed or whitespace-separated. */
export function detectHex({ trimmed }: Probe): Candidate | undefined {
  let digits = trimmed.replace(/\s+/g, '')
  const prefixed = /^0x/i.test(digits)
  if (prefixed) digits = digits.slice(2)
  if (digits === '' || !/^[0-9a-fA-F]+$/.test(digits)) return undefined
  const reasons = ['only hexadecimal digits']
  let confidence: number
  if (digits.length % 2 === 0) {
    confidence = 0.8
    reasons.push(`even number of digits (${digits.length / 2} bytes)`)
  } else {
    confidence = 0.35
    reasons.push('odd number of digits')
  }
  if (prefixed) {
    confidence += 0.1
    reasons.push('0x prefix')
  }
  const upper = /[A-F]/.test(digits)
  const lower = /[a-f]/.test(digits)
  if (upper && lower) {
    confidence -= 0.3
    reasons.push('mixes upper and lower case letters, unusual for hex')
  } else if (!upper && !lower) {
    confidence -= 0.2
    reasons.push('digits only: could be a decimal number')
  }
  if (digits.length >= 16 && digits.length % 2 === 0) confidence += 0.05
  return { type: 'hex', confidence: clamp(confidence), reasons }
}

/** Strict RFC 4648 Base64 (either alphabet), scored by how much it looks like encoded data. */
export function detectBase64(
  { trimmed }: Probe,
  hex: Candidate | undefined,
): Candidate | undefined {
  if (trimmed === '') return undefined
  let decoded: ReturnType<typeof decodeBase64Strict>
  try {
    decoded = decodeBase64Strict(trimmed)
  } catch {
    return undefined
  }
  const compact = trimmed.replace(/[\t\n\f\r ]/g, '')
  const reasons = [
    `decodes strictly as ${decoded.alphabet === 'url' ? 'URL-safe' : 'standard'} Base64`,
  ]
  let confidence = 0.5
  if (decoded.padded) {
    confidence += 0.2
    reasons.push('ends with = padding')
  }
  if (compact.length % 4 === 0) confidence += 0.1
  if (/[A-Z]/.test(compact) && /[a-z]/.test(compact) && /[0-9]/.test(compact)) {
    confidence += 0.1
    reasons.push('mixes upper case, lower case and digits, as encoded data does')
  }
  if (/[+/_-]/.test(compact)) confidence += 0.05
  const text = utf8DecodeStrict(decoded.bytes)
  if (text !== null && printableShare(text) >= 0.95) {
    confidence += 0.1
    reasons.push(`decodes to ${decoded.bytes.length} bytes of UTF-8 text`)
  } else {
    reasons.push(`decodes to ${decoded.bytes.length} bytes of binary data`)
  }
  if (compact.length < 8) {
    confidence -= 0.25
    reasons.push('very short')
  }
  if (/^([a-z]+|[A-Z]+)$/.test(compact)) {
    confidence -= 0.2
    reasons.push('letters of one case only: looks like a word')
  }
  if (/ /.test(trimmed)) {
    confidence -= 0.2
    reasons.push('contains spaces, which encoders do not emit')
  }
  if (hex && confidence >= hex.confidence) {
    confidence = hex.confidence - 0.1
    reasons.push('also valid hex, which is the likelier reading')
  }
  return { type: 'base64', confidence: clamp(confidence), reasons }
}

/** Percent-encoding (RFC 3986) or an HTML form body (key=value&...). */
export function detectUrlEncoded({ trimmed }: Probe): Candidate | undefined {
  if (trimmed === '') return undefined
  const escapes = trimmed.match(/%[0-9A-Fa-f]{2}/g)?.length ?? 0
  const percents = trimmed.split('%').length - 1
  if (percents > escapes) return undefined
  const reasons: string[] = []
  let confidence: number
  if (escapes > 0) {
    confidence = 0.85
    reasons.push(`${escapes} percent-escapes (%XX)`)
    const bytes = Buffer.from(
      trimmed.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) =>
        String.fromCharCode(Number.parseInt(h, 16)),
      ),
      'latin1',
    )
    if (utf8DecodeStrict(bytes) !== null) reasons.push('decodes to UTF-8 text')
    else confidence -= 0.1
  } else if (/^[^=&\s]+=[^&\s]*(&[^=&\s]+=[^&\s]*)+$/.test(trimmed)) {
    confidence = 0.55
    reasons.push('key=value pairs joined by &, as in a form body')
  } else {
    return undefined
  }
  if (/\s/.test(trimmed)) {
    confidence -= 0.3
    reasons.push('contains whitespace, which URL encoding escapes')
  }
  return { type: 'url_encoded', confidence: clamp(confidence), reasons }
}

/** The always-present, low-confidence fallback. */
export function detectText({ printableRatio }: Probe): Candidate {
  return {
    type: 'text',
    confidence: clamp(0.1 + 0.2 * printableRatio),
    reasons: [`fallback; ${Math.round(printableRatio * 100)}% printable characters`],
  }
}

/**
 * Share of code points that are not control characters (C0 other than tab, LF and CR; DEL; C1).
 * 0 for empty text.
 */
export function printableShare(text: string): number {
  let total = 0
  let printable = 0
  for (const char of text) {
    total++
    const cp = char.codePointAt(0) as number
    const control =
      (cp < 0x20 && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d) || (cp >= 0x7f && cp <= 0x9f)
    if (!control) printable++
  }
  return total === 0 ? 0 : printable / total
}
