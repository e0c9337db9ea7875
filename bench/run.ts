/**
 * `npm run bench`: speed figures as medians and as ratios to baselines measured in the same run
 * (raw node:crypto, Buffer, jsdiff, a bare Hono route). Results are printed as Markdown;
 * bench/README.md records a run. `-- --quick` for a short run, `-- --smoke` to check in about a
 * second per section that every section still runs and prints its figures (CI does, see
 * bench/mode.ts).
 *
 * A new section is one more entry of {@link sections}: its `run` takes the mode and picks its sizes
 * with `pick(mode, { full, quick, smoke })`; the smoke run then covers it.
 */
import { logger } from '../src/logger.js'
import { benchChannels } from './channels.js'
import { benchGuard } from './guard.js'
import { benchHostile } from './hostile.js'
import { benchLoad } from './load.js'
import { benchMetrics } from './metrics.js'
import { assertFigures, type BenchMode, benchMode, pick } from './mode.js'
import { benchPaid } from './paid.js'
import { benchPeer } from './peer.js'
import { benchRateLimit } from './ratelimit.js'
import { benchReceipts } from './receipts.js'
import { benchTools } from './tools.js'

/** One section of the bench: a Markdown heading and what prints its figures. */
interface Section {
  title: string
  run(mode: BenchMode): string | Promise<string>
}

const sections: Section[] = [
  {
    title: 'Tools vs the raw libraries they wrap (in process, median per call)',
    run: (mode) => benchTools(mode),
  },
  {
    title: 'HTTP under load vs a bare Hono route',
    run: (mode) =>
      benchLoad(
        pick(mode, { full: 10, quick: 3, smoke: 1 }),
        pick(mode, { full: 3, quick: 3, smoke: 0 }),
      ),
  },
  {
    title: 'Rate limiter and the 402 path (issue 11)',
    run: (mode) =>
      benchRateLimit(
        pick(mode, { full: 7, quick: 2, smoke: 1 }),
        pick(mode, { full: 3, quick: 2, smoke: 1 }),
        pick(mode, { full: 2, quick: 2, smoke: 0 }),
      ),
  },
  {
    title:
      'Paid calls against the peer, the official @x402/hono middleware, with and without the settlement ledger (issues 18, 39)',
    run: (mode) =>
      benchPeer({
        rounds: pick(mode, { full: 5, quick: 2, smoke: 1 }),
        seconds: pick(mode, { full: 3, quick: 2, smoke: 1 }),
        warmUpSeconds: pick(mode, { full: 2, quick: 1, smoke: 0 }),
        ledgerOff: true,
      }),
  },
  {
    title: 'Prepaid channels against the peer, anvil mining every 2 s (issue 38)',
    run: (mode) =>
      benchChannels({
        rounds: pick(mode, { full: 5, quick: 2, smoke: 1 }),
        seconds: pick(mode, { full: 5, quick: 3, smoke: 1 }),
        exactCalls: pick(mode, { full: 5, quick: 2, smoke: 1 }),
      }),
  },
  {
    title: 'Paid round trip on the devnet (official client, sequential, median)',
    run: (mode) => benchPaid(pick(mode, { full: 20, quick: 5, smoke: 2 })),
  },
  {
    title: 'Hostile load: the worker pool, the event loop and /health (issue 9)',
    run: (mode) => benchHostile(pick(mode, { full: 10, quick: 4, smoke: 1 }), mode),
  },
  {
    title: 'The duplicate-settlement guard: its bound and its cost (issue 11)',
    run: (mode) => benchGuard(mode),
  },
  {
    title: 'Signed receipts: their cost per paid call (issue 21)',
    run: (mode) => benchReceipts(mode),
  },
  {
    title: 'Operator metrics and request ids (issue 20)',
    run: (mode) => benchMetrics(mode),
  },
]

async function main(): Promise<void> {
  const mode = benchMode()
  logger.level = 'silent'
  const out = (text = '') => process.stdout.write(`${text}\n`)
  out(
    `# Payload Tools bench (${new Date().toISOString()}, node ${process.version}${mode === 'full' ? '' : `, ${mode}`})`,
  )
  const started = performance.now()
  for (const section of sections) {
    const sectionStarted = performance.now()
    out(`\n## ${section.title}\n`)
    const figures = await section.run(mode)
    out(figures)
    if (mode === 'smoke') {
      assertFigures(section.title, figures)
      const seconds = ((performance.now() - sectionStarted) / 1000).toFixed(1)
      process.stderr.write(
        `bench smoke: "${section.title}" ran and printed figures (${seconds} s)\n`,
      )
    }
  }
  if (mode === 'smoke') {
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    process.stderr.write(`bench smoke: all ${sections.length} sections ran in ${seconds} s\n`)
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  },
)
