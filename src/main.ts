import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { loadConfig } from './config.js'
import { connectionCaps, listen } from './http/node-server.js'
import { logger } from './logger.js'
import { createMetricsApp } from './metrics/index.js'
import { createService, createServiceMetrics } from './service.js'
import { createTelemetry } from './telemetry/index.js'

/**
 * Production entry point (`npm start`): configuration from the environment, see README.
 *
 * Graceful shutdown on SIGTERM and SIGINT, within SHUTDOWN_TIMEOUT_MS:
 * 1. stop accepting connections; new requests on kept-alive sockets get `503 shutting_down` with
 *    `Connection: close`;
 * 2. let the requests in flight finish and their responses be written, settlement included (the
 *    gate starts no settlement that could not finish before the deadline, so a payment is never
 *    settled without its reply);
 * 3. close the idle sockets, stop the tool workers, flush telemetry and close its store;
 * 4. exit 0, or exit 1 with a log line when the deadline passes first.
 */
/** How long sockets may take to close once every response is written, in milliseconds. */
const CLOSE_GRACE_MS = 1000

async function main(): Promise<void> {
  const config = loadConfig()
  logger.level = config.logLevel
  const metrics = createServiceMetrics(config)
  const telemetry = await createTelemetry({
    ...(metrics ? { onWrite: metrics.telemetryWrite } : {}),
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
    ...(config.telemetrySalt ? { salt: config.telemetrySalt } : {}),
    ...(config.telemetryRetentionDays ? { retentionDays: config.telemetryRetentionDays } : {}),
  })
  if (telemetry.health().salt === 'generated') {
    logger.warn(
      'TELEMETRY_SALT is not set: using a generated dev salt in ./data; production must set it and share it across instances',
    )
  }
  const service = createService(config, { telemetry, ...(metrics ? { metrics } : {}) })
  if (service.receipts.keySource === 'generated') {
    logger.warn(
      { kid: service.receipts.kid },
      'RECEIPT_SIGNING_KEY is not set: receipts are signed with a generated dev key in ./data; production must set it and share it across instances',
    )
  }
  if (config.facilitators.length === 0) {
    logger.warn('FACILITATOR_URL is not set: every paid call answers 503 (fail-closed)')
  } else {
    logger.info(
      { facilitators: config.facilitators.map((f) => `${new URL(f.url).host} (auth ${f.auth})`) },
      'facilitators, in order of preference',
    )
  }
  // The workers load the tools before the first paid call, not during it.
  await service.runner.warm()
  const server = await listen(
    service.app.fetch,
    { port: config.port, hostname: config.host },
    connectionCaps(config),
  )
  logger.info(
    {
      port: (server.address() as AddressInfo).port,
      host: config.host,
      base: config.publicBaseUrl,
      workers: config.toolWorkers,
      x402_network: config.stage,
      max_connections: config.maxConnections,
      max_connections_per_client: config.maxConnectionsPerClient,
    },
    'listening',
  )
  // The operator metrics on a port of their own (METRICS_PORT), e.g. on a private interface.
  const metricsServer =
    metrics && config.metricsPort !== undefined
      ? (serve(
          {
            fetch: createMetricsApp(metrics, { token: config.metricsToken }).fetch,
            port: config.metricsPort,
            hostname: config.metricsHost,
          },
          (info) => logger.info({ port: info.port, host: config.metricsHost }, 'metrics listening'),
        ) as Server)
      : undefined
  // Warm the facilitator link so the first 402 is fast; failures are logged and retried lazily.
  service.link.ready().catch(() => {})
  // Settlements left in doubt (a crash, a lost answer) are decided now and then periodically.
  service.resolver?.start()
  // Prepaid channels: the escrow is checked on EVM_RPC_URL, then offered; the manager starts.
  service.channels?.start().catch((error: unknown) => {
    logger.error(
      { err: error instanceof Error ? error.name : typeof error },
      'channels not started',
    )
  })

  // Responses not yet written out. Hono's handler returns before @hono/node-server writes the
  // response, so only the socket level knows when a reply (a settled call's above all) is sent.
  let responding = 0
  let written: (() => void) | undefined
  server.on('request', (_request, response) => {
    responding++
    response.once('close', () => {
      responding--
      if (responding === 0) written?.()
    })
  })

  const stop = async (signal: string) => {
    if (service.lifecycle.shuttingDown()) return
    service.lifecycle.beginShutdown()
    logger.info(
      { signal, in_flight: service.drain.inFlight(), timeout_ms: config.shutdownTimeoutMs },
      'shutting down: refusing new requests, finishing those in flight',
    )
    // A hard deadline, so that a stuck call cannot keep the process alive forever.
    setTimeout(() => {
      logger.error(
        { in_flight: service.drain.inFlight(), timeout_ms: config.shutdownTimeoutMs },
        'shutdown deadline passed with requests in flight; exiting',
      )
      process.exit(1)
    }, config.shutdownTimeoutMs).unref()
    // Stops listening and closes idle keep-alive sockets; the others close after their response,
    // which carries `Connection: close`.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    metricsServer?.close()
    metricsServer?.closeAllConnections()
    if (responding > 0) await new Promise<void>((resolve) => (written = resolve))
    // Every response is written: a socket still open is idle or slow to close; give it a moment.
    const grace = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS)
    await closed
    clearTimeout(grace)
    await service.close()
    await telemetry.close()
    logger.info({ signal }, 'shut down')
    process.exit(0)
  }
  const onSignal = (signal: string) => {
    stop(signal).catch((error: unknown) => {
      logger.fatal({ err: error instanceof Error ? error.name : typeof error }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'))
  process.on('SIGINT', () => onSignal('SIGINT'))
}

main().catch((error: unknown) => {
  logger.fatal({ err: error instanceof Error ? error.message : String(error) }, 'failed to start')
  process.exit(1)
})
