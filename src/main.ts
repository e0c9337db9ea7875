import { serve } from '@hono/node-server'
import { loadConfig } from './config.js'
import { logger } from './logger.js'
import { createService } from './service.js'

/**
 * Production entry point (`npm start`): configuration from the environment, see README.
 */
async function main(): Promise<void> {
  const config = loadConfig()
  logger.level = config.logLevel
  const { app, link } = createService(config)
  if (!config.facilitatorUrl) {
    logger.warn('FACILITATOR_URL is not set: every paid call answers 503 (fail-closed)')
  }
  const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    logger.info({ port: info.port, host: config.host, base: config.publicBaseUrl }, 'listening')
  })
  // Warm the facilitator link so the first 402 is fast; failures are logged and retried lazily.
  link.ready().catch(() => {})
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down')
    server.close(() => process.exit(0))
    setTimeout(() => process.exit(0), 10_000).unref()
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((error: unknown) => {
  logger.fatal({ err: error instanceof Error ? error.message : String(error) }, 'failed to start')
  process.exit(1)
})
