import { mkdtempSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config.js'
import { type DevStack, startDevStack } from '../../src/devnet/stack.js'
import type { Stage } from '../../src/devnet/stage.js'
import { connectionCaps, listen } from '../../src/http/node-server.js'
import type { PaymentEvent } from '../../src/payment/gate.js'
import { createService, type Service, type ServiceOverrides } from '../../src/service.js'
import type { ToolEnv } from '../../src/tools/types.js'

/**
 * Tool workers of a service under test: the machine's cores, at most two. Every thread loads the
 * tools through tsx (about a second of CPU each), and a test's calls rarely run side by side.
 */
export const TEST_TOOL_WORKERS = String(Math.min(2, availableParallelism()))

/** A service listening on a free loopback port. */
export interface RunningService {
  baseUrl: string
  service: Service
  /** Its HTTP server, as src/main.ts starts it (`listen`). */
  server: Server
  stop(): Promise<void>
}

/**
 * Starts the real service (createService + @hono/node-server) against a dev stack, and resolves
 * once its tool workers are warm: a cold pool starts its threads with the first paid call, and on
 * a loaded machine that call (and those queued behind it) could outwait its queue deadline and get
 * `503 overloaded`, a status no test asked for.
 *
 * @param stack - the local chains and facilitator
 * @param env - extra environment (e.g. FACILITATOR_TIMEOUT_MS); TOOL_WORKERS is
 *   {@link TEST_TOOL_WORKERS} and RATE_LIMIT_POINTS 1,000,000 unless given
 * @param overrides - parts to replace (observer, guard, env)
 */
export async function startService(
  stack: Pick<DevStack, 'serviceEnv'> | undefined,
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
): Promise<RunningService> {
  const config = loadConfig({
    ...(stack?.serviceEnv ?? {}),
    PORT: '0',
    TOOL_WORKERS: TEST_TOOL_WORKERS,
    // Every test client is 127.0.0.1: a limit high enough for any test, with the limiter on.
    RATE_LIMIT_POINTS: '1000000',
    ...env,
  })
  let service: Service | undefined
  // The server of src/main.ts: its options, timeouts and connection caps.
  const server = await listen(
    (req) => (service as Service).app.fetch(req),
    { port: 0, hostname: '127.0.0.1' },
    connectionCaps(config),
  )
  const { port } = server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  service = createService(
    { ...config, port, publicBaseUrl: env.PUBLIC_BASE_URL ?? baseUrl },
    // Each service keeps its channels apart (the file store); a test may share one directory.
    { dataDir: mkdtempSync(join(tmpdir(), 'payload-tools-data-')), ...overrides },
  )
  try {
    await service.runner.warm()
    // As src/main.ts does: the escrow check (with EVM_RPC_URL), then the channel manager.
    await service.channels?.start()
  } catch (error) {
    server.close()
    await service.close()
    throw error
  }
  return {
    baseUrl,
    service,
    server,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Keep-alive sockets of the test's fetch would hold close() open.
        server.closeAllConnections()
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
  /** Stops the service, then the stack unless it is the worker's shared one. */
  stop(): Promise<void>
}

/** Funded payers per chain of the worker's shared dev stack ({@link sharedDevStack}). */
export const SHARED_PAYERS = 4

let shared: Promise<DevStack> | undefined

/**
 * The dev stack (mainnet stage, {@link SHARED_PAYERS} payers per chain, one facilitator) that the
 * end-to-end files of one vitest worker share: the e2e project runs a worker's files one after
 * another in one module cache (vitest.config.ts), so each file need not start its own chains. A
 * file using it reads balances and facilitator counts as differences, may stop and start the
 * facilitator within a test, and never leaves a fault set or a payer drained; a file that needs
 * more starts a stack of its own. Never stopped by a file: the facilitator and litesvm live in
 * this process and anvil's watchdog ends it with the process (src/devnet/anvil.ts).
 *
 * @example const stack = await sharedDevStack()
 */
export function sharedDevStack(): Promise<DevStack> {
  shared ??= startDevStack({ payers: SHARED_PAYERS }).catch((error: unknown) => {
    shared = undefined
    throw error
  })
  return shared
}

/**
 * Starts the service on the worker's shared dev stack ({@link sharedDevStack}), or on a stack of
 * its own (`ownStack`, or the testnet stage), with a fixed tool clock and an observer that collects
 * every PaymentEvent.
 *
 * @example
 * beforeAll(async () => {
 *   dev = await startDevService({ payers: 2, clock: { nowSeconds: () => 1_700_000_000 } })
 * })
 * @param options.payers - funded payers per chain the test uses (at most {@link SHARED_PAYERS} on
 *   the shared stack)
 * @param options.ownStack - a stack of its own, stopped with the service (a test that drains a
 *   payer or leaves the chain changed)
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
  ownStack?: boolean
}): Promise<DevService> {
  const own = options.ownStack === true || (options.stage ?? 'mainnet') !== 'mainnet'
  if (!own && options.payers > SHARED_PAYERS) {
    throw new Error(`the shared dev stack has ${SHARED_PAYERS} payers; ask for ownStack`)
  }
  const stack = own
    ? await startDevStack({
        payers: options.payers,
        ...(options.stage ? { stage: options.stage } : {}),
      })
    : await sharedDevStack()
  const stopStack = () => (own ? stack.stop() : Promise.resolve())
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
        await stopStack()
      },
    }
  } catch (error) {
    await stopStack()
    throw error
  }
}
