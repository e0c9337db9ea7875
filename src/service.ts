import type { Config } from './config.js'
import { createApp, MAX_BODY_BYTES } from './http/app.js'
import { resolveAllowList } from './mcp/dns-rebinding.js'
import { registerMcp } from './mcp/server.js'
import { createFacilitatorLink, type FacilitatorLink } from './payment/facilitator.js'
import { createPaymentGate, type PaymentGate, type PaymentObserver } from './payment/gate.js'
import { createMemoryGuard, type SettlementGuard } from './payment/guard.js'
import { configuredRails } from './payment/rails.js'
import type { Telemetry } from './telemetry/index.js'
import { catalog } from './tools/catalog.js'
import type { ToolEnv } from './tools/types.js'

/** Parts a test or the devnet may replace or add. */
export interface ServiceOverrides {
  guard?: SettlementGuard
  /** Telemetry: records payment events, serves /stats and reports health. */
  telemetry?: Telemetry
  /** An extra payment observer (tests), called after telemetry. */
  observer?: PaymentObserver
  env?: ToolEnv
}

/** The assembled service: the Hono app and the parts behind it. */
export interface Service {
  app: ReturnType<typeof createApp>
  gate: PaymentGate
  link: FacilitatorLink
}

/**
 * Assembles the service from configuration: rails, facilitator link, duplicate-settlement guard,
 * payment gate, and the HTTP app with the MCP endpoint mounted on it (the composition root: the
 * only module that knows both transports). Performs no I/O; the facilitator's `/supported` is
 * loaded lazily.
 *
 * @example
 * const { app } = createService(loadConfig())
 */
export function createService(config: Config, overrides: ServiceOverrides = {}): Service {
  const rails = configuredRails(config)
  const link = createFacilitatorLink({
    url: config.facilitatorUrl,
    timeoutMs: config.facilitatorTimeoutMs,
    rails,
  })
  const { telemetry, observer: extra } = overrides
  const observer: PaymentObserver = async (event) => {
    await telemetry?.record(event)
    await extra?.(event)
  }
  const gate = createPaymentGate({
    link,
    guard: overrides.guard ?? createMemoryGuard(),
    observer,
    ...(overrides.env ? { env: overrides.env } : {}),
  })
  const mcpAllowList = resolveAllowList({
    publicBaseUrl: config.publicBaseUrl,
    host: config.host,
    port: config.port,
    allowedHosts: config.mcpAllowedHosts,
    allowedOrigins: config.mcpAllowedOrigins,
  })
  const app = createApp({
    gate,
    tools: catalog,
    publicBaseUrl: config.publicBaseUrl,
    rails,
    ...(telemetry
      ? { stats: () => telemetry.stats(), telemetryHealth: () => telemetry.health() }
      : {}),
    ...(config.ownershipProofs ? { ownershipProofs: config.ownershipProofs } : {}),
    mounts: [
      (app) =>
        registerMcp(app, {
          gate,
          tools: catalog,
          publicBaseUrl: config.publicBaseUrl,
          allowList: mcpAllowList,
          maxBodyBytes: MAX_BODY_BYTES,
        }),
    ],
  })
  return { app, gate, link }
}
