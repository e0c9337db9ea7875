import { serve } from '@hono/node-server'
import { loadConfig } from './config.js'
import { logger } from './logger.js'
import { createService } from './service.js'
import { createTelemetry } from './telemetry/index.js'

/**
 * Production entry point (`npm start`): configuration from the environment, see README.
 */
async function main(): Promise<void> {
  const config = loadConfig()
  logger.level = config.logLevel
  const telemetry = await createTelemetry({
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
    ...(config.telemetrySalt ? { salt: config.telemetrySalt } : {}),
    ...(config.telemetryRetentionDays ? { retentionDays: config.telemetryRetentionDays } : {}),
  })
  if (telemetry.health().salt === 'generated') {
    logger.warn(
      'TELEMETRY_SALT is not set: using a generated dev salt in ./data; production must set it and share it across instances',
    )
  }
  const { app, link } = createService(config, { telemetry })
  if (!config.facilitatorUrl) {
    logger.warn('FACILITATOR_URL is not set: every paid call answers 503 (fail-closed)')
  }
  const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    logger.info({ port: info.port, host: config.host, base: config.publicBaseUrl }, 'listening')
  })
  // Warm the facilitator link so the first 402 is fast; failures are logged and retried lazily.
  link.ready().catch(() => {})
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: draining requests, flushing telemetry')
    // A hard deadline, so a stuck connection cannot keep the process alive forever.
    setTimeout(() => process.exit(1), 15_000).unref()
    server.close(() => {
      telemetry.close().finally(() => process.exit(0))
    })
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((error: unknown) => {
  logger.fatal({ err: error instanceof Error ? error.message : String(error) }, 'failed to start')
  process.exit(1)
})
