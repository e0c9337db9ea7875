// biome-ignore lint/suspicious/noExplicitAny: test-only convenience, values are asserted exactly
type Loose = Record<string, any>

/**
 * Reads a response body as JSON for assertions. Tests compare whole objects with toEqual, so the
 * loose type only saves casts; it never hides an unchecked value.
 */
export async function json(res: Response): Promise<Loose> {
  return (await res.json()) as Loose
}
