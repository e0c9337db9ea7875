/** One kibibyte (1,024 bytes). */
export const KiB = 1024

/** One mebibyte (1,048,576 bytes). */
export const MiB = 1024 * KiB

/** Largest text field: 1 MiB of UTF-8, the same as the whole HTTP body. */
export const MAX_TEXT_BYTES = MiB

/**
 * Deepest JSON value (nested arrays and objects) accepted in any JSON field. Our libraries
 * (canonicalize, the JSON Schema evaluator) recurse per level, so depth must be bounded to keep
 * them far from the stack limit.
 */
export const MAX_JSON_DEPTH = 128

/**
 * Formats a byte count for limit messages.
 *
 * @example formatBytes(1_048_576) // '1 MiB'
 */
export function formatBytes(bytes: number): string {
  if (bytes % MiB === 0) return `${bytes / MiB} MiB`
  if (bytes % KiB === 0) return `${bytes / KiB} KiB`
  return `${bytes} bytes`
}
