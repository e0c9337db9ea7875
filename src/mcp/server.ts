import {
  type CacheHint,
  type CallToolRequest,
  type CallToolResult,
  createMcpHandler as createSdkHandler,
  isLegacyRequest,
  ProtocolErrorCode,
  type RequestId,
  Server,
  type Tool,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server'
import type { ResourceInfo } from '@x402/core/types'
import type { Context, Hono } from 'hono'
import { bazaarExtension } from '../descriptions/bazaar.js'
import { type ListedRail, listTool } from '../descriptions/mcp/listing.js'
import {
  MCP_PATH,
  MCP_PROTOCOL_VERSIONS,
  SERVICE,
  serviceSummary,
} from '../descriptions/service-info.js'
import { networksInWords } from '../descriptions/words.js'
import { describeFailure } from '../failures/describe.js'
import { logger } from '../logger.js'
import type { ClientQuota, PaymentGate } from '../payment/gate.js'
import { networkInfo } from '../payment/networks.js'
import { requestPoints } from '../payment/quota.js'
import { CheckTimeoutError, OverloadedError } from '../runner/errors.js'
import type { MessagesOutcome } from '../runner/messages.js'
import type { ToolDefinition } from '../tools/types.js'
import { type AllowList, dnsRebindingProtection, resolveAllowList } from './dns-rebinding.js'
import { readPaidEnvelope } from './envelope.js'
import { FAILURE_META_KEY, failureResult, PAYMENT_META_KEY, paidResult } from './results.js'
import { UnknownToolError } from './unknown-tool.js'

/** What the MCP endpoint is built from. */
export interface McpOptions {
  gate: PaymentGate
  tools: readonly ToolDefinition[]
  /** Base URL of the service without trailing slash; `resource.url` is `<publicBaseUrl>/mcp`. */
  publicBaseUrl: string
  /** DNS-rebinding allow list; derived from `publicBaseUrl` alone when absent. */
  allowList?: AllowList
  /** `serverInfo.version` in the initialize result; the interface version (SPEC 9) by default. */
  version?: string
  /**
   * The caller's rate-limit account (src/http/rate-limit.ts): every JSON-RPC message costs a
   * point, except a paid `tools/call`, which the payment gate counts. Absent: no rate limit.
   */
  quotaOf?: (c: Context) => ClientQuota
}

/**
 * Most JSON-RPC messages in one request. MCP 2025-06-18 removed JSON-RPC batching, so current
 * clients send one; a batch is still answered (older protocol versions), within this bound, so
 * that one request cannot queue more input checks than the checker threads take at once.
 */
export const MAX_BATCH_MESSAGES = 8

/** The `_meta` key of an MCP payment, as a string (x402 MCP transport). */
const PAID = PAYMENT_META_KEY

/** What the HTTP request holds, read once on arrival. */
interface McpRequest {
  /** The raw body (a copy goes to the input checker for each `tools/call`). */
  bytes: Uint8Array
  quota: ClientQuota | undefined
  /** Points its body cost that a settled paid call gives back (0 in a batch). */
  prepaid: number
}

/** One catalogue tool as the MCP endpoint serves it, built once at start. */
interface McpEntry {
  tool: ToolDefinition
  listed: Tool
  resource: ResourceInfo
  extensions: Record<string, unknown>
}

/**
 * The initialize `instructions`: what the server offers (from the catalogue), on which networks
 * (from the rails) and how to pay.
 */
const instructions = (tools: readonly ToolDefinition[], rails: readonly ListedRail[]) => {
  const networks = rails.map((r) => networkInfo(r.network))
  return (
    `${serviceSummary(tools, networks)} initialize, ping and tools/list are free. Every ` +
    `tools/call is paid with x402 v2 (scheme exact, USDC on ${networksInWords(networks, 'or')}): a call without ` +
    'payment returns an isError result whose structuredContent is the PaymentRequired; sign one ' +
    'of its accepts with an x402 client and call again with the PaymentPayload in ' +
    'params._meta["x402/payment"]. The result is {ok: true, result} and the settlement receipt is ' +
    'in _meta["x402/payment-response"]. Invalid arguments and tool failures are never charged.'
  )
}

/**
 * Creates the handler of `POST /mcp`: an MCP server over the Streamable HTTP transport (stateless,
 * JSON responses) whose `tools/list` is generated from the catalogue and whose `tools/call` goes
 * through the payment gate shared with HTTP.
 *
 * Protocol versions ({@link MCP_PROTOCOL_VERSIONS}, v2 SDK `@modelcontextprotocol/server`):
 * 2026-07-28 requests (the per-request `_meta` envelope, `server/discover`, `Mcp-Method`/`Mcp-Name`
 * headers, `ttlMs`/`cacheScope` on `tools/list`) go to the SDK's per-request entry; 2025-era ones
 * (after `initialize`: 2025-11-25, 2025-06-18 and older) to its stateless Streamable HTTP
 * transport answering JSON. `tools/list` is in catalogue order in both.
 *
 * Stateless: a fresh server and transport per HTTP request, no `Mcp-Session-Id`. Every call is
 * self-contained (its payment travels in its own `_meta`), the server sends no notifications, and
 * no session map has to be kept, expired or shared between instances behind a load balancer.
 *
 * `tools/call` results: see {@link paidResult} and {@link failureResult}. An unknown tool name is
 * a JSON-RPC error -32602 (MCP spec, "Error Handling") naming the closest tool and every tool
 * ({@link UnknownToolError}). The arguments are validated by our Zod
 * schemas inside the gate, never by the MCP SDK, so the error codes are the HTTP ones.
 *
 * @example
 * const handle = createMcpHandler({ gate, tools: catalog, publicBaseUrl })
 * app.post('/mcp', (c) => handle(c.req.raw))
 */
export function createMcpHandler(
  options: McpOptions,
): (body: Uint8Array, request: Request, quota?: ClientQuota) => Promise<Response> {
  const { gate } = options
  const version = options.version ?? SERVICE.version
  const rails: ListedRail[] = gate.link
    .status()
    .rails.map(({ network }) => ({ network, name: networkInfo(network).name }))
  const entries = new Map<string, McpEntry>()
  for (const tool of options.tools) {
    entries.set(tool.mcpName, {
      tool,
      listed: listTool(tool, rails),
      // The endpoint URL, not mcp://tool/<name>: with the bazaar's (resource.url, input.tool) key
      // it says where to connect, and it is unique to this service.
      resource: {
        url: `${options.publicBaseUrl}${MCP_PATH}`,
        description: tool.description,
        mimeType: 'application/json',
      },
      extensions: bazaarExtension(tool, 'mcp'),
    })
  }
  const listed = { tools: [...entries.values()].map((e) => e.listed) }
  const toolNames = [...entries.keys()]
  const serverInstructions = instructions(options.tools, rails)

  /**
   * @param id - the JSON-RPC id of the call: the input checker finds its `arguments` in the raw
   *   body by it, so that the gate checks exactly what HTTP would (the SDK's own parse of the
   *   request rebuilds `arguments` and silently drops an own "__proto__" key, which our strict
   *   schemas refuse), and none of it is parsed or checked on this thread
   */
  async function callTool(
    params: CallToolRequest['params'],
    id: RequestId,
    request: McpRequest,
  ): Promise<CallToolResult> {
    const entry = entries.get(params.name)
    if (!entry) throw new UnknownToolError(params.name, toolNames)
    try {
      const { result, settlement } = await gate.execute({
        tool: entry.tool,
        transport: 'mcp',
        source: { body: request.bytes.slice(), mcpRequestId: id },
        ...(params._meta?.[PAYMENT_META_KEY] !== undefined
          ? { payment: { value: params._meta[PAYMENT_META_KEY] } }
          : {}),
        prepaid: request.prepaid,
        resource: entry.resource,
        extensions: entry.extensions,
        ...(request.quota ? { quota: request.quota } : {}),
      })
      return paidResult(result.value(), settlement)
    } catch (error) {
      const failure = failureResult(error)
      const code = (failure._meta?.[FAILURE_META_KEY] as { code?: string } | undefined)?.code
      logger.debug({ tool: entry.tool.id, transport: 'mcp', code }, 'mcp tools/call failed')
      return failure
    }
  }

  /**
   * Serves one HTTP request. Its body is paid for before it is read (a rate-limit point per
   * started 64 KiB), then read ({@link readBody}), then its messages beyond the first are counted
   * (a paid `tools/call` is the gate's). More than one paid call or {@link MAX_BATCH_MESSAGES}
   * messages are refused whole. Then a fresh MCP server and transport serve the messages read.
   */
  return async function handleMcp(
    bytes: Uint8Array,
    request: Request,
    quota?: ClientQuota,
  ): Promise<Response> {
    const prepaid = requestPoints(bytes.length)
    let messages: unknown[]
    let parsedBody: unknown
    try {
      await quota?.charge(prepaid)
      const read = await readBody(bytes)
      // The transport's own answer; the parser's message may quote the body.
      if (read.status === 'invalid_json')
        return jsonRpcError(PARSE_ERROR, 'Parse error: Invalid JSON')
      if (read.status === 'out_of_bounds')
        return jsonRpcError(ProtocolErrorCode.InvalidRequest, read.message)
      parsedBody = JSON.parse(read.json)
      messages = Array.isArray(parsedBody) ? parsedBody : [parsedBody]
      const paid = messages.filter(isPaidCall).length
      if (paid > 1 || messages.length > MAX_BATCH_MESSAGES) {
        return jsonRpcError(
          ProtocolErrorCode.InvalidRequest,
          paid > 1
            ? `One request carries at most one paid tools/call (this batch holds ${paid}); nothing was verified or run. Send each paid call in its own request.`
            : `One request carries at most ${MAX_BATCH_MESSAGES} JSON-RPC messages (this batch holds ${messages.length}); nothing was run.`,
        )
      }
      await quota?.charge(messages.length - paid - prepaid)
    } catch (error) {
      const failure = describeFailure(error)
      return Response.json(failure.body, {
        status: failure.status,
        headers: {
          ...failure.headers,
          ...(failure.retryAfterSeconds
            ? { 'Retry-After': String(failure.retryAfterSeconds) }
            : {}),
        },
      })
    }
    // The request's points go back when its one message is a paid call whose payment verifies (and
    // stay given only if it settles: src/payment/outcome.ts).
    const call: McpRequest = { bytes, quota, prepaid: messages.length === 1 ? prepaid : 0 }
    const server = () => newServer(call)
    // 2025-era traffic (no per-request `_meta` envelope: initialize, then each request; batches):
    // the stateless Streamable HTTP transport answering JSON, as before. The 2026-07-28 envelope:
    // the SDK's per-request entry, which checks the envelope and the Mcp-Method/Mcp-Name headers.
    if (await isLegacyRequest(request, parsedBody)) {
      const legacy = server()
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      })
      try {
        await legacy.connect(transport)
        // In JSON-response mode the Response is complete once this resolves.
        return await transport.handleRequest(request, { parsedBody })
      } finally {
        await legacy.close()
      }
    }
    const modern = createSdkHandler(server, { legacy: 'reject' })
    try {
      // Our handlers send no notifications, so the answer is one JSON body, complete here.
      return await modern.fetch(request, { parsedBody })
    } finally {
      await modern.close()
    }
  }

  /**
   * Reads a JSON-RPC body where request bodies are read (runner.messages: within bounds, tool
   * arguments aside, off this thread when it is not small), on the free lane: nothing about a
   * request's bytes earns it paid capacity. When the free lane cannot read it (full, or out of
   * time), a paid `tools/call` is still served: its envelope, arguments aside, is read here
   * ({@link readPaidEnvelope}), and the gate checks its arguments on the paid lane once its
   * payment verifies.
   *
   * @throws {OverloadedError} or {CheckTimeoutError} of the free lane, for any other body
   */
  async function readBody(bytes: Uint8Array): Promise<MessagesOutcome> {
    try {
      return await gate.runner.messages(bytes.slice(), 'free')
    } catch (error) {
      if (!(error instanceof OverloadedError || error instanceof CheckTimeoutError)) throw error
      const envelope = readPaidEnvelope(bytes)
      if (!envelope) throw error
      return envelope
    }
  }

  /**
   * A fresh low-level server for one HTTP request: tools/list serves our catalogue schemas as
   * they are, and tools/call reaches the gate with the raw body (McpServer.registerTool would
   * validate the arguments). The catalogue is fixed for the life of the process, hence
   * listChanged: false, and the same for every caller, hence the public cache hints.
   */
  function newServer(call: McpRequest): Server {
    const server = new Server(
      { name: 'payload-tools', title: SERVICE.name, version },
      {
        capabilities: { tools: { listChanged: false } },
        instructions: serverInstructions,
        supportedProtocolVersions: [...MCP_PROTOCOL_VERSIONS],
        cacheHints: { 'tools/list': CATALOGUE_CACHE, 'server/discover': CATALOGUE_CACHE },
      },
    )
    server.setRequestHandler('tools/list', () => listed)
    server.setRequestHandler('tools/call', (req, ctx) => callTool(req.params, ctx.mcpReq.id, call))
    return server
  }
}

/**
 * `ttlMs`/`cacheScope` of `tools/list` and `server/discover` (2026-07-28): the catalogue is the
 * same for every caller and changes only with a deploy.
 */
const CATALOGUE_CACHE: CacheHint = { ttlMs: 5 * 60_000, cacheScope: 'public' }

/** JSON-RPC 2.0 "Parse error". */
const PARSE_ERROR = -32700

/** An HTTP 400 with a JSON-RPC error for the whole request (-32600 Invalid Request, -32700 Parse error). */
function jsonRpcError(code: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', id: null, error: { code, message } }, { status: 400 })
}

/** A JSON-RPC message that is a `tools/call` carrying `_meta["x402/payment"]`. */
function isPaidCall(message: unknown): boolean {
  if (!isObject(message) || message.method !== 'tools/call' || !isObject(message.params)) {
    return false
  }
  const meta = message.params._meta
  return isObject(meta) && meta[PAID] !== undefined
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Mounts the MCP endpoint at `/mcp` (SPEC 4.3) on the app: DNS-rebinding protection, then
 * `POST /mcp` (JSON-RPC over Streamable HTTP). No `GET` (server-to-client stream) or `DELETE`
 * (session end) exist in stateless mode: the app's method-aware not-found handler answers them
 * 405 with `Allow`, which MCP clients read as "no SSE stream".
 *
 * @example
 * registerMcp(app, { gate, tools: catalog, publicBaseUrl, allowList })
 */
export function registerMcp(app: Hono, options: McpOptions): void {
  const allowList = options.allowList ?? resolveAllowList({ publicBaseUrl: options.publicBaseUrl })
  const handle = createMcpHandler(options)
  app.use(MCP_PATH, dnsRebindingProtection(allowList))
  app.post(MCP_PATH, async (c) =>
    handle(new Uint8Array(await c.req.arrayBuffer()), c.req.raw, options.quotaOf?.(c)),
  )
}
