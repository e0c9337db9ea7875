import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { loadConfig } from '../../src/config.js'
import type { DevStack } from '../../src/devnet/stack.js'
import { createService, type Service, type ServiceOverrides } from '../../src/service.js'

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
 * @param env - extra environment (e.g. FACILITATOR_TIMEOUT_MS)
 * @param overrides - parts to replace (observer, guard, env)
 */
export async function startService(
  stack: DevStack | undefined,
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
): Promise<RunningService> {
  const config = loadConfig({ ...(stack?.serviceEnv ?? {}), PORT: '0', ...env })
  let service: Service | undefined
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      { fetch: (req) => (service as Service).app.fetch(req), port: 0, hostname: '127.0.0.1' },
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
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Keep-alive sockets of the test's fetch would hold close() open.
        ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
      }),
  }
}
