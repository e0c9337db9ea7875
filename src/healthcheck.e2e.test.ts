import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { freePort } from './devnet/ports.js'
import { probeHealth } from './healthcheck.js'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A local server answering `GET /health` with `status` and a JSON body `{ status: label }`. */
async function healthServer(status: number, label: string, hang = false): Promise<number> {
  const server = createServer((_req, res) => {
    if (hang) return
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: label }))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** Runs `src/healthcheck.ts` as the image runs `dist/healthcheck.js`; resolves its exit code and output. */
function runProbe(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/healthcheck.ts'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk))
  child.stderr.on('data', (chunk: Buffer) => (out += chunk))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })))
}

describe('probeHealth', () => {
  it('is healthy on 200, degraded included, and unhealthy on any other status', async () => {
    const ok = await healthServer(200, 'ok')
    const degraded = await healthServer(200, 'degraded')
    const failing = await healthServer(503, 'shutting_down')
    expect(await probeHealth(`http://127.0.0.1:${ok}/health`)).toEqual({
      healthy: true,
      detail: '200 ok',
    })
    expect(await probeHealth(`http://127.0.0.1:${degraded}/health`)).toEqual({
      healthy: true,
      detail: '200 degraded',
    })
    expect(await probeHealth(`http://127.0.0.1:${failing}/health`)).toEqual({
      healthy: false,
      detail: '503 shutting_down',
    })
  })

  it('is unhealthy when nothing listens or the answer takes longer than its timeout', async () => {
    const closed = await freePort()
    expect(await probeHealth(`http://127.0.0.1:${closed}/health`)).toEqual({
      healthy: false,
      detail: 'ECONNREFUSED',
    })
    const hanging = await healthServer(200, 'ok', true)
    expect(await probeHealth(`http://127.0.0.1:${hanging}/health`, 200)).toEqual({
      healthy: false,
      detail: 'TimeoutError',
    })
  })
})

describe('as a program (the image HEALTHCHECK)', () => {
  it('exits 0 when /health answers 200 and 1 otherwise, naming the URL', async () => {
    // One JSON log line (the time varies), as the service writes them.
    const line = (out: string) => ({ ...JSON.parse(out), time: 0 }) as Record<string, unknown>
    const port = await healthServer(200, 'degraded')
    const healthy = await runProbe({ HOST: '0.0.0.0', PORT: String(port) })
    expect(healthy.code).toBe(0)
    expect(healthy.out.endsWith('}\n')).toBe(true)
    expect(line(healthy.out)).toEqual({
      level: 30,
      time: 0,
      url: `http://127.0.0.1:${port}/health`,
      detail: '200 degraded',
      msg: 'healthy',
    })
    const closed = await freePort()
    const unhealthy = await runProbe({ PORT: String(closed) })
    expect(unhealthy.code).toBe(1)
    expect(line(unhealthy.out)).toEqual({
      level: 40,
      time: 0,
      url: `http://127.0.0.1:${closed}/health`,
      detail: 'ECONNREFUSED',
      msg: 'unhealthy',
    })
  }, 120_000)
})
