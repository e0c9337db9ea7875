/**
 * `npm run bench` (`-- --quick` for a short run): speed figures as medians and as ratios to
 * baselines measured in the same run (raw node:crypto, Buffer, jsdiff, a bare Hono route).
 * Results are printed as Markdown; bench/README.md records a run.
 */
import { logger } from '../src/logger.js'
import { benchGuard } from './guard.js'
import { benchHostile } from './hostile.js'
import { benchLoad } from './load.js'
import { benchPaid } from './paid.js'
import { benchPeer } from './peer.js'
import { benchRateLimit } from './ratelimit.js'
import { benchReceipts } from './receipts.js'
import { benchTools } from './tools.js'

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  logger.level = 'silent'
  const out = (text = '') => process.stdout.write(`${text}\n`)
  out(
    `# Payload Tools bench (${new Date().toISOString()}, node ${process.version}${quick ? ', quick' : ''})`,
  )

  out('\n## Tools vs the raw libraries they wrap (in process, median per call)\n')
  out(benchTools(quick))

  out('\n## HTTP under load vs a bare Hono route\n')
  out(await benchLoad(quick ? 3 : 10))

  out('\n## Rate limiter and the 402 path (issue 11)\n')
  out(await benchRateLimit(quick ? 2 : 7, quick ? 2 : 3))

  out('\n## Paid calls against the peer, the official @x402/hono middleware (issue 18)\n')
  out(
    await benchPeer({
      rounds: quick ? 2 : 5,
      seconds: quick ? 2 : 3,
      warmUpSeconds: quick ? 1 : 2,
    }),
  )

  out('\n## Paid round trip on the devnet (official client, sequential, median)\n')
  out(await benchPaid(quick ? 5 : 20))

  out('\n## Hostile load: the worker pool, the event loop and /health (issue 9)\n')
  out(await benchHostile(quick ? 4 : 10, quick))

  out('\n## The duplicate-settlement guard: its bound and its cost (issue 11)\n')
  out(await benchGuard(quick))

  out('\n## Signed receipts: their cost per paid call (issue 21)\n')
  out(await benchReceipts(quick))
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  },
)
