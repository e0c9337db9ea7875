/**
 * `npm run bench` (`-- --quick` for a short run): speed figures as medians and as ratios to
 * baselines measured in the same run (raw node:crypto, Buffer, jsdiff, a bare Hono route).
 * Results are printed as Markdown; bench/README.md records a run.
 */
import { loadConfig } from '../src/config.js'
import { logger } from '../src/logger.js'
import { createService } from '../src/service.js'
import { fakeGate } from '../test/helpers/fakes.js'
import { bareHono, listen, load, loadTable } from './http.js'
import { benchPaid } from './paid.js'
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

  out('\n## HTTP under load vs a bare Hono route (autocannon, 10 connections)\n')
  const seconds = quick ? 2 : 8
  const bare = await listen(bareHono().fetch)
  // The 402 path needs /supported once; a scripted facilitator keeps the network out of it.
  const { gate } = fakeGate()
  const service = createService(loadConfig({ LOG_LEVEL: 'silent' }))
  const { createApp } = await import('../src/http/app.js')
  const { catalog } = await import('../src/tools/catalog.js')
  const app = createApp({ gate, tools: catalog, publicBaseUrl: 'http://127.0.0.1' })
  const svc = await listen(app.fetch)
  const unconfigured = await listen(service.app.fetch)
  try {
    const results = [
      await load(
        'bare Hono POST (baseline)',
        { url: `${bare.url}/bare`, method: 'POST', body: '{}' },
        seconds,
      ),
      await load(
        'POST /hash unpaid -> 402',
        { url: `${svc.url}/hash`, method: 'POST', body: '{"input":"abc"}' },
        seconds,
      ),
      await load('GET /health', { url: `${svc.url}/health` }, seconds),
      await load(
        'POST /hash, no facilitator -> 503',
        { url: `${unconfigured.url}/hash`, method: 'POST', body: '{}' },
        seconds,
      ),
    ]
    out(loadTable(results))
  } finally {
    await Promise.all([bare.close(), svc.close(), unconfigured.close()])
  }

  out('\n## Paid round trip on the devnet (official client, sequential, median)\n')
  out(await benchPaid(quick ? 5 : 20))
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  },
)
