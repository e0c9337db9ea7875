import type { Config } from './config.js'
import { createApp } from './http/app.js'
import { createFacilitatorLink, type FacilitatorLink } from './payment/facilitator.js'
import { createPaymentGate, type PaymentGate, type PaymentObserver } from './payment/gate.js'
import { createMemoryGuard, type SettlementGuard } from './payment/guard.js'
import { configuredRails } from './payment/rails.js'
import { catalog } from './tools/catalog.js'
import type { ToolEnv } from './tools/types.js'

/** Parts a test or the devnet may replace. */
export interface ServiceOverrides {
  guard?: SettlementGuard
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
 * payment gate and HTTP app. Performs no I/O; the facilitator's `/supported` is loaded lazily.
 *
 * @example
 * const { app } = createService(loadConfig())
 */
export function createService(config: Config, overrides: ServiceOverrides = {}): Service {
  const link = createFacilitatorLink({
    url: config.facilitatorUrl,
    timeoutMs: config.facilitatorTimeoutMs,
    rails: configuredRails(config),
  })
  const gate = createPaymentGate({
    link,
    guard: overrides.guard ?? createMemoryGuard(),
    ...(overrides.observer ? { observer: overrides.observer } : {}),
    ...(overrides.env ? { env: overrides.env } : {}),
  })
  const app = createApp({ gate, tools: catalog, publicBaseUrl: config.publicBaseUrl })
  return { app, gate, link }
}
