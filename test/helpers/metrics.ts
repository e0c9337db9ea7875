/** One sample line of a Prometheus text exposition. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/**
 * The sample lines of a Prometheus text exposition (format 0.0.4), comments skipped. Label values
 * are read with the format's three escapes (`\\`, `\"`, `\n`).
 *
 * @example parseExposition('a_total{x="1"} 2\n')[0] // { name: 'a_total', labels: { x: '1' }, value: 2 }
 */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not an exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, raw] of (match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c: string) =>
        c === 'n' ? '\n' : c,
      )
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The names of the metric families an exposition declares (`# TYPE` lines), with the series
 * names a query may use: a histogram's `_bucket`, `_sum` and `_count`, a summary's `_sum` and
 * `_count`.
 */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string)
    if (type === 'histogram')
      for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`)
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(`${name}${s}`)
  }
  return names
}

/**
 * The sum of the samples of `name` whose labels include every pair of `where`.
 *
 * @example total(samples, 'x402_payments_total', { outcome: 'settled', network: 'eip155:8453' })
 */
export function total(
  samples: readonly Sample[],
  name: string,
  where: Record<string, string> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
}
