import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { loadConfig } from '../../src/config.js'
import { type DevStack, startDevStack } from '../../src/devnet/stack.js'
import type { Stage } from '../../src/devnet/stage.js'
import { NODE_SERVER_OPTIONS } from '../../src/http/node-server.js'
import type { PaymentEvent } from '../../src/payment/gate.js'
import { createService, type Service, type ServiceOverrides } from '../../src/service.js'
import type { ToolEnv } from '../../src/tools/types.js'

/** A service listening on a free loopback port. */
export interface RunningService {
  baseUrl: string
  service: Service
  stop(): Promise<void>
}

/**
 * Starts the real service (createService + @hono/node-server) against a dev stack.
 *
 * @param stack - the local chains and facilitator
 * @param env - extra environment (e.g. FACILITATOR_TIMEOUT_MS); TOOL_WORKERS is 1 unless given,
 *   since every worker thread loads the tools through tsx (about a second of CPU each), and
 *   RATE_LIMIT_POINTS 1,000,000
 * @param overrides - parts to replace (observer, guard, env)
 */
export async function startService(
  stack: DevStack | undefined,
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
): Promise<RunningService> {
  const config = loadConfig({
    ...(stack?.serviceEnv ?? {}),
    PORT: '0',
    TOOL_WORKERS: '1',
    // Every test client is 127.0.0.1: a limit high enough for any test, with the limiter on.
    RATE_LIMIT_POINTS: '1000000',
    ...env,
  })
  let service: Service | undefined
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      {
        fetch: (req) => (service as Service).app.fetch(req),
        port: 0,
        hostname: '127.0.0.1',
        serverOptions: NODE_SERVER_OPTIONS,
      },
      () => resolve(s),
    )
  })
  const { port } = server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  service = createService(
    { ...config, port, publicBaseUrl: env.PUBLIC_BASE_URL ?? baseUrl },
    overrides,
  )
  return {
    baseUrl,
    service,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Keep-alive sockets of the test's fetch would hold close() open.
        ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
      })
      await service?.close()
    },
  }
}

/** A dev stack with the service on it, as the paid end-to-end tests use them. */
export interface DevService {
  stack: DevStack
  svc: RunningService
  /** Every PaymentEvent the service reported, in order; a test may empty it. */
  events: PaymentEvent[]
  /** Stops the service, then the stack. */
  stop(): Promise<void>
}

/**
 * Starts a dev stack and the service on it, with a fixed tool clock and an observer that collects
 * every PaymentEvent.
 *
 * @example
 * beforeAll(async () => {
 *   dev = await startDevService({ payers: 2, clock: { nowSeconds: () => 1_700_000_000 } })
 * })
 * @param options.payers - funded payers per chain
 * @param options.clock - the tools' clock, so results that hold a time are known in advance
 * @param options.env - extra service environment (e.g. TOOL_WORKERS)
 * @param options.overrides - more parts to replace (e.g. telemetry); its observer is called after
 *   the event is collected
 * @param options.stage - `testnet`: the chains pose as Base Sepolia and Solana devnet and the
 *   service runs with X402_NETWORK=testnet; default `mainnet`
 */
export async function startDevService(options: {
  payers: number
  clock: ToolEnv
  env?: Record<string, string>
  overrides?: ServiceOverrides
  stage?: Stage
}): Promise<DevService> {
  const stack = await startDevStack({
    payers: options.payers,
    ...(options.stage ? { stage: options.stage } : {}),
  })
  const events: PaymentEvent[] = []
  const extra = options.overrides?.observer
  try {
    const svc = await startService(stack, options.env ?? {}, {
      ...options.overrides,
      env: options.clock,
      observer: async (e) => {
        events.push(e)
        await extra?.(e)
      },
    })
    return {
      stack,
      svc,
      events,
      stop: async () => {
        await svc.stop()
        await stack.stop()
      },
    }
  } catch (error) {
    await stack.stop()
    throw error
  }
}
