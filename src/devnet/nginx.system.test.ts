import { readFileSync } from 'node:fs'
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
} from 'node:http'
import {
  type AddressInfo,
  connect,
  createServer as createTcpServer,
  type Server as TcpServer,
} from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { NGINX_TEMPLATE_PATH, type Nginx, renderNginxConf, startNginx } from './nginx.js'
import { freePort } from './ports.js'

// The shipped deploy/nginx.conf on Debian's nginx, in front of small upstreams whose behaviour is
// scripted: what nginx forwards, when it goes on to another instance and when it must not.

const template = readFileSync(NGINX_TEMPLATE_PATH, 'utf8')
const values = { listen: '127.0.0.1:8080', stateDir: '/s', logDir: '/l' }

describe('renderNginxConf', () => {
  it('repeats the instance line per instance and fills the other placeholders', () => {
    const conf = renderNginxConf(template, {
      ...values,
      instances: ['10.0.0.1:8402', '10.0.0.2:8402', '10.0.0.3:8402'],
    })
    const servers = conf.split('\n').filter((line) => /^\s*server \S+ max_fails/.test(line))
    expect(servers.map((line) => line.trim())).toEqual([
      'server 10.0.0.1:8402 max_fails=2 fail_timeout=5s;',
      'server 10.0.0.2:8402 max_fails=2 fail_timeout=5s;',
      'server 10.0.0.3:8402 max_fails=2 fail_timeout=5s;',
    ])
    expect(conf).toContain('listen 127.0.0.1:8080 default_server;')
    expect(conf).toContain('proxy_temp_path /s/proxy;')
    expect(conf).toContain('access_log /l/access.log upstreams;')
    // Only the documentation in comments still names placeholders.
    const code = conf
      .split('\n')
      .map((line) => line.replace(/#.*$/, ''))
      .join('\n')
    expect(code).not.toMatch(/\{\{/)
    expect(code).not.toMatch(/\binclude\b/)
  })

  it('refuses values that could break out of a directive, and templates it does not know', () => {
    expect(() => renderNginxConf(template, { ...values, instances: [] })).toThrow(
      'at least one instance',
    )
    expect(() =>
      renderNginxConf(template, { ...values, instances: ['1.2.3.4:1; include /etc/passwd'] }),
    ).toThrow('unsafe value')
    expect(() =>
      renderNginxConf(`${template}\n# {{fine}} in a comment\nx {{other}};`, {
        ...values,
        instances: ['a:1'],
      }),
    ).toThrow('unknown placeholder {{other}}')
    expect(() =>
      renderNginxConf(template.replace('{{state_dir}}/body', '/x'), {
        ...values,
        instances: ['a:1'],
      }),
    ).not.toThrow()
    expect(() =>
      renderNginxConf(template.replaceAll('{{log_dir}}', '/x'), { ...values, instances: ['a:1'] }),
    ).toThrow('the template has no {{log_dir}}')
  })
})

/** An HTTP upstream that records what reaches it and echoes the request. */
interface Upstream {
  address: string
  requests: { method: string; headers: IncomingMessage['headers']; bodyBytes: number }[]
  connections: number
  close(): Promise<void>
}

async function echoUpstream(): Promise<Upstream> {
  const requests: Upstream['requests'] = []
  const server: Server = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    let bodyBytes = 0
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length
    })
    req.on('end', () => {
      requests.push({ method: req.method ?? '', headers: req.headers, bodyBytes })
      // A response header as large as the biggest PAYMENT-REQUIRED (Base64, ~8 KiB) and more.
      res.setHeader('payment-required', 'A'.repeat(10 * 1024))
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ served: 'echo', bodyBytes }))
    })
  })
  const upstream = { requests, connections: 0 } as Upstream
  server.on('connection', () => {
    upstream.connections++
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  upstream.address = `127.0.0.1:${(server.address() as AddressInfo).port}`
  upstream.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  return upstream
}

/** A TCP upstream that resets every connection once a request has arrived: a crashed instance. */
async function resettingUpstream(): Promise<{
  address: string
  received: string[]
  close(): Promise<void>
}> {
  const received: string[] = []
  const server: TcpServer = createTcpServer((socket) => {
    socket.once('data', (chunk: Buffer) => {
      received.push(chunk.toString('latin1').split(' ')[0] ?? '')
      socket.resetAndDestroy()
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * An HTTP upstream that holds every request until `release()`, then answers each 200: requests
 * in progress for as long as a test needs.
 */
async function holdingUpstream(): Promise<{
  address: string
  held(): number
  release(): void
  close(): Promise<void>
}> {
  let releases: (() => void)[] = []
  let released = false
  const server: Server = createServer((req, res) => {
    req.resume()
    const answer = () => res.end('{"served":"held"}')
    if (released) answer()
    else releases.push(answer)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => releases.length,
    release: () => {
      released = true
      for (const answer of releases.splice(0)) answer()
    },
    close: () =>
      new Promise<void>((resolve) => {
        releases = []
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** A GET over a new connection from `from` (any 127.0.0.0/8 address is this machine). */
function getFrom(
  url: string,
  from: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress: from, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        body += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Resolves once `check` holds, polling every 50 ms; rejects after `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function front(instances: string[]): Promise<Nginx> {
  const nginx = await startNginx({ instances })
  cleanups.push(() => nginx.stop())
  return nginx
}

async function echo(): Promise<Upstream> {
  const upstream = await echoUpstream()
  cleanups.push(() => upstream.close())
  return upstream
}

async function resetting() {
  const upstream = await resettingUpstream()
  cleanups.push(() => upstream.close())
  return upstream
}

const post = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })

describe('deploy/nginx.conf on Debian nginx', () => {
  it('forwards Host, X-Forwarded-For (appended) and X-Forwarded-Proto, over kept-alive connections', async () => {
    const upstream = await echo()
    const nginx = await front([upstream.address])
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${nginx.url}/health`, {
        headers: { 'x-forwarded-for': '203.0.113.7' },
      })
      expect(res.status).toBe(200)
      await res.text()
    }
    expect(upstream.requests).toHaveLength(6)
    expect(upstream.requests[0]?.headers).toMatchObject({
      host: '127.0.0.1',
      'x-forwarded-for': '203.0.113.7, 127.0.0.1',
      'x-forwarded-proto': 'http',
    })
    expect(upstream.requests[0]?.headers.connection).toBeUndefined()
    // Six requests, at most one connection per nginx worker: upstream keep-alive works.
    expect(upstream.connections).toBeLessThan(6)
  })

  it('never re-sends a POST that reached an instance; answers 502 in the service envelope', async () => {
    const crashed = await resetting()
    const healthy = await echo()
    const nginx = await front([crashed.address, healthy.address])
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await post(`${nginx.url}/hash`)
      statuses.push(res.status)
      if (res.status === 502) {
        expect(res.headers.get('content-type')).toBe('application/json')
        expect(await res.json()).toEqual({
          ok: false,
          error:
            'No instance answered in full; a payment sent with this request may have been settled',
          code: 'upstream_failed',
        })
      } else await res.text()
    }
    // Every POST reached exactly one instance: the crashed one's got 502, none went on.
    expect(crashed.received.length).toBeGreaterThanOrEqual(1)
    expect(crashed.received.every((method) => method === 'POST')).toBe(true)
    expect(healthy.requests).toHaveLength(4 - crashed.received.length)
    expect(statuses.filter((s) => s === 502)).toHaveLength(crashed.received.length)
    expect(statuses.filter((s) => s === 200)).toHaveLength(healthy.requests.length)
  })

  it('passes a GET on to the next instance when one fails mid-request', async () => {
    const crashed = await resetting()
    const healthy = await echo()
    const nginx = await front([crashed.address, healthy.address])
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${nginx.url}/stats`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ served: 'echo', bodyBytes: 0 })
    }
    expect(crashed.received.length).toBeGreaterThanOrEqual(1)
    expect(healthy.requests).toHaveLength(2)
  })

  it('passes a POST on when the connection is refused (nothing was sent)', async () => {
    const down = `127.0.0.1:${await freePort()}`
    const healthy = await echo()
    const nginx = await front([down, healthy.address])
    for (let i = 0; i < 4; i++) {
      const res = await post(`${nginx.url}/hash`)
      expect(res.status).toBe(200)
      await res.text()
    }
    expect(healthy.requests.map((r) => r.method)).toEqual(['POST', 'POST', 'POST', 'POST'])
  })

  it('takes bodies up to 1 MiB and refuses larger ones with the service 413 envelope', async () => {
    const upstream = await echo()
    const nginx = await front([upstream.address])
    const ok = await fetch(`${nginx.url}/hash`, { method: 'POST', body: 'a'.repeat(1024 * 1024) })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ served: 'echo', bodyBytes: 1024 * 1024 })
    const tooLarge = await fetch(`${nginx.url}/hash`, {
      method: 'POST',
      body: 'a'.repeat(1024 * 1024 + 1),
    })
    expect(tooLarge.status).toBe(413)
    expect(await tooLarge.json()).toEqual({
      ok: false,
      error: 'The body exceeds 1 MiB',
      code: 'payload_too_large',
    })
    expect(upstream.requests).toHaveLength(1)
  })

  it('answers /metrics itself as an unknown path, token or not: scrapes go to the instances', async () => {
    const upstream = await echo()
    const nginx = await front([upstream.address])
    const res = await fetch(`${nginx.url}/metrics`, {
      headers: { Authorization: 'Bearer some-metrics-token-0123456789abcdef' },
    })
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({ ok: false, error: 'Not found', code: 'not_found' })
    expect(upstream.requests).toHaveLength(0)
  })

  it('carries a 10 KiB response header and a 30 KiB PAYMENT-SIGNATURE; refuses a 33 KiB one', async () => {
    const upstream = await echo()
    const nginx = await front([upstream.address])
    const res = await fetch(`${nginx.url}/pipeline`, {
      method: 'POST',
      headers: { 'payment-signature': 'B'.repeat(30 * 1024) },
      body: '{}',
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('payment-required')).toBe('A'.repeat(10 * 1024))
    await res.text()
    expect(upstream.requests[0]?.headers['payment-signature']).toHaveLength(30 * 1024)
    const tooLarge = await fetch(`${nginx.url}/pipeline`, {
      method: 'POST',
      headers: { 'payment-signature': 'B'.repeat(33 * 1024) },
      body: '{}',
    })
    expect(tooLarge.status).toBe(400)
    await tooLarge.text()
    expect(upstream.requests).toHaveLength(1)
  })

  it('lets one address have 64 requests in progress, answers its 65th 429 in the service envelope, and serves another address meanwhile', async () => {
    const upstream = await holdingUpstream()
    cleanups.push(() => upstream.close())
    const nginx = await front([upstream.address])
    const first = Array.from({ length: 64 }, () => getFrom(`${nginx.url}/stats`, '127.0.0.1'))
    await until(() => upstream.held() === 64)
    const refused = await getFrom(`${nginx.url}/stats`, '127.0.0.1')
    expect(refused.status).toBe(429)
    expect(refused.headers['content-type']).toBe('application/json')
    expect(refused.headers['retry-after']).toBe('1')
    expect(JSON.parse(refused.body)).toEqual({
      ok: false,
      error:
        'Too many requests in progress from this address: at most 64 at once. Retry after Retry-After seconds',
      code: 'rate_limited',
    })
    expect(upstream.held()).toBe(64)
    // Another address is another client: its request reaches the instance.
    const other = getFrom(`${nginx.url}/stats`, '127.0.0.2')
    await until(() => upstream.held() === 65)
    upstream.release()
    expect((await other).status).toBe(200)
    expect((await Promise.all(first)).map((a) => a.status)).toEqual(new Array(64).fill(200))
    // Its requests done, the first address is served again.
    expect((await getFrom(`${nginx.url}/stats`, '127.0.0.1')).status).toBe(200)
  })

  it('closes a connection that sends one byte and nothing more within client_header_timeout (5 s), answering nothing', async () => {
    const upstream = await echo()
    const nginx = await front([upstream.address])
    const socket = connect(nginx.port, '127.0.0.1')
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk.toString()
    })
    socket.on('error', () => {})
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    const started = performance.now()
    socket.write('G')
    await Promise.race([
      new Promise((resolve) => socket.once('close', resolve)),
      new Promise((resolve) => setTimeout(resolve, 20_000)),
    ])
    const ms = performance.now() - started
    expect(socket.destroyed).toBe(true)
    // nginx times it in its own process: a margin for a busy machine, well short of twice 5 s.
    expect(ms).toBeGreaterThanOrEqual(4900)
    expect(ms).toBeLessThan(8000)
    expect(received).toBe('')
    expect(upstream.requests).toHaveLength(0)
  }, 30_000)
})
