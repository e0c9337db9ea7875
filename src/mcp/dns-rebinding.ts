import type { MiddlewareHandler } from 'hono'

/**
 * Who may reach `/mcp` from where: `hosts` are hostnames without port (IPv6 in brackets) matched
 * against the `Host` header, `origins` are exact origins (`scheme://host[:port]`) matched against
 * the `Origin` header. A list holding `"*"` disables its check.
 */
export interface AllowList {
  hosts: readonly string[]
  origins: readonly string[]
}

/** What the default {@link AllowList} is derived from. */
export interface AllowListSettings {
  /** Base URL of the service, as in `resource.url`. */
  publicBaseUrl: string
  /** Listen address (HOST); a specific address is allowed as a Host too. */
  host?: string
  /** Listen port (PORT), for the loopback origins. */
  port?: number
  /** Replaces the default hostnames (MCP_ALLOWED_HOSTS). */
  allowedHosts?: readonly string[] | undefined
  /** Replaces the default origins (MCP_ALLOWED_ORIGINS). */
  allowedOrigins?: readonly string[] | undefined
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]']
const HOST_SYNTAX = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]'])

/**
 * The allow list: the configured lists when given, else the public hostname, loopback names and
 * a specific HOST as hosts, and the public origin plus loopback origins on PORT as origins.
 * Loopback names are safe to allow: a rebinding page's requests carry its own hostname in `Host`.
 *
 * @example
 * resolveAllowList({ publicBaseUrl: 'https://tools.example', host: '0.0.0.0', port: 8402 })
 * // { hosts: ['tools.example', 'localhost', '127.0.0.1', '[::1]'],
 * //   origins: ['https://tools.example', 'http://localhost:8402', 'http://127.0.0.1:8402',
 * //             'http://[::1]:8402'] }
 */
export function resolveAllowList(settings: AllowListSettings): AllowList {
  const base = new URL(settings.publicBaseUrl)
  const hosts = settings.allowedHosts ?? [
    base.hostname,
    ...LOOPBACK,
    ...(settings.host && !WILDCARD_BINDS.has(settings.host) ? [hostnameOf(settings.host)] : []),
  ]
  const port = settings.port ?? (base.port ? Number(base.port) : undefined)
  const origins = settings.allowedOrigins ?? [
    base.origin,
    ...(port ? LOOPBACK.map((h) => `http://${h}:${port}`) : []),
  ]
  return {
    hosts: unique(hosts.map((h) => (h === '*' ? h : hostnameOf(h)))),
    origins: unique(origins.map((o) => (o === '*' ? o : new URL(o).origin))),
  }
}

/**
 * DNS-rebinding protection for the MCP endpoint (MCP Streamable HTTP transport, "Security
 * Warning"): a request whose `Host` hostname is not allowed, or whose `Origin` is present and not
 * allowed, is refused with 403 and a JSON-RPC error before it reaches the MCP server. Requests
 * without `Origin` (non-browser clients) pass the origin check.
 *
 * Our own middleware because the SDK's `hostHeaderValidation` is Express-only and the transport's
 * `allowedHosts`/`allowedOrigins` options are deprecated in favour of external middleware; it
 * follows their semantics (Host port-agnostic, Origin exact).
 *
 * @example
 * app.use('/mcp', dnsRebindingProtection(resolveAllowList({ publicBaseUrl })))
 */
export function dnsRebindingProtection(allow: AllowList): MiddlewareHandler {
  const anyHost = allow.hosts.includes('*')
  const anyOrigin = allow.origins.includes('*')
  const hosts = new Set(allow.hosts)
  const origins = new Set(allow.origins)
  return async function dnsRebindingGuard(c, next) {
    if (!anyHost) {
      // Node's server builds the request URL from Host (or HTTP/2 :authority), so the URL is the
      // fallback when the header is absent.
      const host = c.req.header('host') ?? new URL(c.req.url).host
      const hostname = safeHostname(host)
      if (hostname === undefined || !hosts.has(hostname)) {
        return forbidden(`Host not allowed: ${host}`)
      }
    }
    const origin = c.req.header('origin')
    if (origin !== undefined && !anyOrigin && !origins.has(safeOrigin(origin) ?? '')) {
      return forbidden(`Origin not allowed: ${origin}`)
    }
    await next()
  }
}

function forbidden(message: string): Response {
  return Response.json(
    { jsonrpc: '2.0', error: { code: -32000, message }, id: null },
    { status: 403 },
  )
}

function hostnameOf(host: string): string {
  // A bare IPv6 address (HOST=::1) gets the brackets a Host header carries.
  const bracketed = host.split(':').length > 2 && !host.startsWith('[') ? `[${host}]` : host
  const hostname = safeHostname(bracketed)
  if (hostname === undefined) throw new Error(`Invalid host name: ${host}`)
  return hostname
}

/** `Host` value -> lowercase hostname without port (IPv6 in brackets); undefined if invalid. */
function safeHostname(host: string): string | undefined {
  // Only `name[:port]` or `[v6][:port]`: the URL parser would read "evil.test@localhost" as
  // localhost.
  if (!HOST_SYNTAX.test(host)) return undefined
  try {
    const hostname = new URL(`http://${host}`).hostname
    return hostname === '' ? undefined : hostname
  } catch {
    return undefined
  }
}

function safeOrigin(origin: string): string | undefined {
  try {
    const parsed = new URL(origin).origin
    return parsed === 'null' ? undefined : parsed
  } catch {
    return undefined
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)]
}
