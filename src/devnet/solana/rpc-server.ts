/**
 * A Solana JSON-RPC 2.0 HTTP server over litesvm, for dev and tests only.
 *
 * This is a test double of the Solana network, not of our code: the x402 SVM client, resource
 * server and facilitator (`@x402/svm` through `@solana/kit`) talk to it exactly as they talk to a
 * validator's RPC, and the transactions they build run through the real SPL Token, Associated
 * Token, Memo and ComputeBudget programs inside litesvm. No Solana test validator can be installed
 * here, hence this stand-in.
 *
 * Methods (wire format of the Solana JSON-RPC API: `{context: {slot}, value}` wrappers, base58 or
 * base64 encodings, u64 values as JSON numbers):
 * - getLatestBlockhash: litesvm's current blockhash, valid for 150 slots
 * - getAccountInfo: `base64` or `base58` encoding, optional `dataSlice`
 * - getBalance, getTokenAccountBalance
 * - simulateTransaction: honours `sigVerify` (default false) and `replaceRecentBlockhash`
 *   (returns `replacementBlockhash`), optional `innerInstructions`
 * - sendTransaction: preflight simulation unless `skipPreflight`; a failed preflight is the
 *   `-32002` error "Transaction simulation failed: …" (a resent transaction fails with
 *   "This transaction has already been processed"); without preflight it answers with the
 *   signature and executes the transaction at once unless it already landed
 * - getSignatureStatuses: landed transactions are `finalized` at once (litesvm executes
 *   synchronously and never forks), with their `err` if execution failed; others are `null`
 * - isBlockhashValid: true for litesvm's latest blockhash only, the one blockhash it accepts
 *   (the devnet's `expireBlockhash()` replaces it)
 * - getSignaturesForAddress: the transactions landed through `sendTransaction` that name the
 *   account (static keys), newest first, with `limit` (1–1000, default 1000), `before`, `until`
 * - getTransaction: such a transaction in `base64` or `base58` (`json` is not served), with
 *   `slot`, `blockTime` (wall clock when it landed), `version` (v0 needs
 *   `maxSupportedTransactionVersion`, error -32015 as Solana) and `meta` with `err`, `status`,
 *   `logMessages`, `computeUnitsConsumed` (no balances, no fee); `null` when unknown
 *
 * Every other method is the JSON-RPC error `-32601` "Method not found". `commitment` options are
 * accepted and ignored: there is only one, final, state.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Signature } from '@solana/kit'
import type { LiteSVM } from 'litesvm'
import { logger } from '../../logger.js'
import { createSolanaRpcMethods, RpcError } from './rpc-methods.js'

/** A running devnet RPC endpoint. */
export interface SolanaRpcServer {
  /** `http://127.0.0.1:<port>`, to give to `createSolanaRpc` or the x402 SVM signers. */
  rpcUrl: string
  /** How many times each method was called, unknown methods included (for traces and tests). */
  methodCalls(): Record<string, number>
  /** Signatures of the transactions `sendTransaction` landed, in order (a ledger for tests). */
  landedSignatures(): Signature[]
  /** Closes the server and its open connections. */
  stop(): Promise<void>
}

type JsonRpcId = string | number | null

interface JsonRpcResponse {
  jsonrpc: '2.0'
  id: JsonRpcId
  result?: unknown
  error?: { code: number; message: string; data?: unknown }
}

// A per-process random tag, so no string in a response (a log line, say) can pose as a bigint.
const U64_TAG = `u64-${randomUUID()}:`
const U64_PATTERN = new RegExp(`"${U64_TAG}(\\d+)"`, 'g')

/** JSON with bigints written as plain JSON numbers, the way Solana writes u64 values. */
function stringifyWithBigInts(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${U64_TAG}${v}` : v)).replace(
    U64_PATTERN,
    '$1',
  )
}

function failure(id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcResponse {
  return {
    jsonrpc: '2.0',
    id,
    error: data === undefined ? { code, message } : { code, message, data },
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

/**
 * Starts the devnet JSON-RPC server on 127.0.0.1 (`port` 0, the default, picks a free port).
 *
 * @example
 * const { rpcUrl, stop } = await startSolanaRpc(new LiteSVM())
 * const rpc = createSolanaRpc(rpcUrl)
 * const { value } = await rpc.getLatestBlockhash().send()
 * await stop()
 */
export async function startSolanaRpc(
  svm: LiteSVM,
  { port = 0 }: { port?: number } = {},
): Promise<SolanaRpcServer> {
  const landed: Signature[] = []
  const methods = createSolanaRpcMethods(svm, { onLanded: (signature) => landed.push(signature) })
  const calls = new Map<string, number>()
  const reportedUnknown = new Set<string>()

  function answer(request: unknown): JsonRpcResponse | undefined {
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return failure(null, -32600, 'Invalid request')
    }
    const { id, method, params } = request as Record<string, unknown>
    const replyId: JsonRpcId = typeof id === 'string' || typeof id === 'number' ? id : null
    if (typeof method !== 'string') return failure(replyId, -32600, 'Invalid request')
    calls.set(method, (calls.get(method) ?? 0) + 1)
    const response = dispatch(replyId, method, params)
    // JSON-RPC 2.0 notifications (no id) get no response.
    return 'id' in request ? response : undefined
  }

  function dispatch(id: JsonRpcId, method: string, params: unknown): JsonRpcResponse {
    const handler = Object.hasOwn(methods, method) ? methods[method] : undefined
    if (handler === undefined) {
      if (!reportedUnknown.has(method)) {
        reportedUnknown.add(method)
        logger.warn({ method }, 'solana devnet rpc: method not implemented')
      }
      return failure(id, -32601, 'Method not found')
    }
    if (params !== undefined && !Array.isArray(params)) return failure(id, -32602, 'Invalid params')
    try {
      return { jsonrpc: '2.0', id, result: handler(params ?? []) }
    } catch (error) {
      if (error instanceof RpcError) return failure(id, error.code, error.message, error.data)
      const reason = error instanceof Error ? error.message : String(error)
      logger.error({ method, reason }, 'solana devnet rpc: internal error')
      return failure(id, -32603, 'Internal error')
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end()
      return
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(await readBody(req))
    } catch {
      parsed = undefined
    }
    let payload: unknown
    if (parsed === undefined) {
      payload = failure(null, -32700, 'Parse error')
    } else if (Array.isArray(parsed)) {
      payload = parsed.length === 0 ? answer(undefined) : parsed.map(answer).filter(Boolean)
    } else {
      payload = answer(parsed)
    }
    if (payload === undefined) {
      res.writeHead(204).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(stringifyWithBigInts(payload))
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'solana devnet rpc: request failed')
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  const { port: boundPort } = server.address() as AddressInfo

  return {
    rpcUrl: `http://127.0.0.1:${boundPort}`,
    methodCalls: () => Object.fromEntries(calls),
    landedSignatures: () => [...landed],
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}
