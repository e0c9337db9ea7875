import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { getBase58Encoder } from '@solana/kit'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
} from '@x402/core/http'
import type { Network, SettleResponse } from '@x402/core/types'
import type { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import canonicalize from 'canonicalize'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import type { Hex } from 'viem'
import { toolExample } from '../descriptions/examples.js'
import { toolInputSchema } from '../descriptions/json-schema.js'
import { toolPrice } from '../descriptions/service-info.js'
import { catalog } from '../tools/catalog.js'
import type { ToolDefinition } from '../tools/types.js'
import { channelLine, shortChannel } from './channel-words.js'
import { type PayerKeys, payerClient } from './payer.js'
import { channelScheme, DEFAULT_CHANNELS_DIR } from './payer-channels.js'

/** Where `npm run pay` writes: the JSON envelope alone on stdout, everything else on stderr. */
export interface PayOutput {
  stdout(text: string): void
  stderr(text: string): void
}

/** The default service of `npm run pay`: the one `npm run dev` serves. */
export const DEFAULT_SERVICE_URL = 'http://127.0.0.1:8402'

/** The usage of `npm run pay`, with the tools of the catalogue. */
export const PAY_USAGE = `usage: npm run pay -- [--rail evm|solana] [--scheme exact|batch-settlement] [--url SERVICE_URL] <tool> '<json body>'
       npm run pay -- --refund [--url SERVICE_URL] [<tool>]   (the prepaid channel's unclaimed rest back)
       npm run pay -- <tool> --help   (the tool's fields, price and an example)
  tools: ${catalog.map((t) => t.id).join(' ')}
  --scheme batch-settlement: pay on Base from a prepaid channel: the first call deposits the
    service's minDeposit (1 USDC by default) into the x402 escrow, later calls pay by voucher
    (no transaction each); --refund gets what was not charged back (the service claims the rest)
  environment: PAYER_PRIVATE_KEY (evm), PAYER_SOLANA_SECRET_KEY and SOLANA_RPC_URL (solana),
    EVM_RPC_URL (batch-settlement and --refund: the Base RPC the client reads its channel from),
    PAYER_CHANNELS_DIR (the channel records kept between runs, default ${DEFAULT_CHANNELS_DIR}),
    SERVICE_URL (default ${DEFAULT_SERVICE_URL}), SOLANA_NETWORK (default: mainnet or devnet, whichever the 402 offers)
  stdout: the service's JSON answer only; status lines go to stderr`

/**
 * How `npm run pay` resends the same payment when the service answers `503 settlement_unknown`
 * (or `409 payment_in_progress`): the tool ran and the payment may have moved, and the retry of
 * the very same PAYMENT-SIGNATURE is how to get the result (a new payment would charge again).
 */
export interface SettlementRetry {
  /** Resends of the same payment before giving up (default 3). */
  attempts: number
  /** Seconds to wait when the answer has no readable `Retry-After` (default 5). */
  defaultWaitSeconds: number
  /** The longest wait, whatever `Retry-After` says (default 30). */
  maxWaitSeconds: number
  /** Waits `ms` milliseconds (tests record the waits instead). */
  sleep: (ms: number) => Promise<unknown>
}

export const SETTLEMENT_RETRY: SettlementRetry = {
  attempts: 3,
  defaultWaitSeconds: 5,
  maxWaitSeconds: 30,
  sleep: (ms) => sleep(ms),
}

/** The codes whose answer says: send the same payment again after `Retry-After`. */
const RETRY_SAME_PAYMENT = new Set(['settlement_unknown', 'payment_in_progress'])

/**
 * Reads a `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 *
 * @returns whole seconds (0 for a past date), or undefined when absent or malformed
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  const text = value?.trim()
  if (!text) return undefined
  if (/^\d+$/.test(text)) return Number(text)
  if (!/^[A-Za-z]{3}, /.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000))
}

/** The `code` of a JSON error envelope, if the answer is one. */
async function codeOf(res: Response): Promise<string | undefined> {
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { code?: unknown } | undefined
  return typeof body?.code === 'string' ? body.code : undefined
}

/** A JSON Schema of one field, as far as the help reads it. */
interface FieldSchema {
  type?: string | string[]
  enum?: unknown[]
  default?: unknown
  description?: string
}

/** A field's type in words: `string`, `one of "SHA-256", "SHA-384"`, `any JSON value`. */
function fieldType(schema: FieldSchema & { items?: FieldSchema }): string {
  if (schema.type === 'array' && schema.items?.type) return `array of ${schema.items.type}s`
  if (schema.enum) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`
  if (Array.isArray(schema.type)) return schema.type.join(' or ')
  return schema.type ?? 'any JSON value'
}

/**
 * The help of one tool, generated from its catalogue entry (the JSON Schema every surface
 * publishes, its price, limits and first example): `npm run pay -- <tool> --help`.
 *
 * @example toolHelp(hashTool).split('\n')[0] // 'hash: Hash. SHA-2 digest of UTF-8 text. …'
 */
export function toolHelp(tool: ToolDefinition): string {
  const schema = toolInputSchema(tool) as {
    properties?: Record<string, FieldSchema>
    required?: string[]
  }
  const required = new Set(schema.required ?? [])
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]) => {
    const presence = required.has(name)
      ? 'required'
      : field.default !== undefined
        ? `optional, default ${JSON.stringify(field.default)}`
        : 'optional'
    return `  ${name} (${fieldType(field)}; ${presence})${field.description ? `: ${field.description}` : ''}`
  })
  const price = toolPrice(tool)
  const body = JSON.stringify(toolExample(tool).body).replaceAll("'", "'\\''")
  return [
    `${tool.id}: ${tool.title}. ${tool.description}`,
    `price: ${price.usdc} USDC per call (POST ${tool.path}; MCP tool ${tool.mcpName})`,
    'fields of the JSON body (no others are accepted):',
    ...fields,
    ...(tool.limits.length ? ['limits:', ...tool.limits.map((l) => `  ${l}`)] : []),
    'example:',
    `  npm run pay -- ${tool.id} '${body}'`,
  ].join('\n')
}

/** A command line `npm run pay` cannot run; the message ends without a newline. */
class UsageError extends Error {}

/** The 402's JSON body, as far as `npm run pay` reads it. */
interface PaymentRequiredBody {
  input_check?: { valid?: boolean; errors?: { path?: string; message?: string }[] }
}

/** The unpaid 402's free `input_check` refused the body: the payment is never signed. */
class BodyRefused extends Error {
  constructor(readonly envelope: PaymentRequiredBody) {
    super('input_check refused the body')
  }
}

/** The unpaid 402 offers no `batch-settlement` on Base: nothing is signed. */
class SchemeNotOffered extends Error {
  constructor(readonly offered: string[]) {
    super('batch-settlement not offered')
  }
}

/** A catalogue tool by its id (`hash`, `json-validate`), with or without a leading slash. */
function findTool(name: string): ToolDefinition | undefined {
  const id = name.replace(/^\/+/, '')
  return catalog.find((t) => t.id === id) as ToolDefinition | undefined
}

/**
 * The `batch-settlement` client scheme of the EVM payer, its channel records in
 * PAYER_CHANNELS_DIR (default {@link DEFAULT_CHANNELS_DIR}), reading the chain at EVM_RPC_URL.
 */
function readChannels(keys: PayerKeys, env: NodeJS.ProcessEnv): BatchSettlementEvmScheme {
  const rpcUrl = env.EVM_RPC_URL
  if (!rpcUrl) {
    throw new UsageError(
      'EVM_RPC_URL is not set (batch-settlement reads the channel from the Base chain: a JSON-RPC URL)',
    )
  }
  return channelScheme(keys.evmPrivateKey as Hex, {
    rpcUrl,
    directory: env.PAYER_CHANNELS_DIR || DEFAULT_CHANNELS_DIR,
  })
}

function readKeys(rail: 'evm' | 'solana', env: NodeJS.ProcessEnv): PayerKeys {
  if (rail === 'evm') {
    if (!env.PAYER_PRIVATE_KEY) {
      throw new UsageError("PAYER_PRIVATE_KEY is not set (the payer's EVM private key, hex)")
    }
    return { evmPrivateKey: env.PAYER_PRIVATE_KEY as Hex }
  }
  const secret = env.PAYER_SOLANA_SECRET_KEY
  const rpcUrl = env.SOLANA_RPC_URL
  if (!secret || !rpcUrl) {
    throw new UsageError('PAYER_SOLANA_SECRET_KEY and SOLANA_RPC_URL must be set')
  }
  return {
    solana: {
      secretKey: new Uint8Array(getBase58Encoder().encode(secret)),
      rpcUrl,
      network: env.SOLANA_NETWORK as Network | undefined,
    },
  }
}

/**
 * `npm run pay`: pays for one tool call with the official `@x402/fetch` client and prints the
 * service's JSON answer on stdout, alone, so that `npm run pay … | jq` works; the status line
 * (`HTTP 200 in 62 ms (402 -> sign -> paid request)`) and the settlement go to stderr.
 *
 * Nothing is sent for an unknown tool or a bad command line (exit 2, with the usage). The unpaid
 * request comes first, as x402 has it; when its 402 carries a failing free `input_check`, the
 * command stops there (exit 1, the 402's envelope on stdout, the issues on stderr) and nothing is
 * signed: the service would refuse the paid request anyway.
 *
 * With `--scheme batch-settlement` the EVM key pays from a prepaid channel with the official
 * client scheme (./payer-channels.ts): the first call deposits the offer's `minDeposit`, later
 * runs pay by voucher, the channel's record kept in PAYER_CHANNELS_DIR between runs; the status
 * line says which, with the channel's charged amount. `--refund` asks the service for the
 * channel's unclaimed rest ({@link refund}). A 402 without a `batch-settlement` offer stops the
 * command before anything is signed (exit 1).
 *
 * When the paid request answers `503 settlement_unknown` (the tool ran, the settlement's outcome
 * is unknown) or `409 payment_in_progress`, the command resends the very same request, same
 * PAYMENT-SIGNATURE, never a new signature, after `Retry-After` (bounded; see
 * {@link SettlementRetry}), up to `retry.attempts` times, and then gives up saying that the payment
 * may have moved and that only the same payment may safely be retried.
 *
 * @example
 * await runPay(['hash', '{"input":"abc"}'], process.env, { stdout: …, stderr: … }) // 0
 * @param fetchImpl - the HTTP client under the x402 one (tests count its requests)
 * @returns the exit code: 0 for a 2xx answer, 1 for any other answer or a refused body, 2 for a
 *   usage error
 */
export async function runPay(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  out: PayOutput,
  fetchImpl: typeof fetch = fetch,
  retry: Partial<SettlementRetry> = {},
): Promise<number> {
  try {
    return await pay(argv, env, out, fetchImpl, { ...SETTLEMENT_RETRY, ...retry })
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr(`pay: ${error.message}\n${PAY_USAGE}\n`)
      return 2
    }
    throw error
  }
}

async function pay(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  out: PayOutput,
  fetchImpl: typeof fetch,
  retry: SettlementRetry,
): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>
  try {
    parsed = parseCommandLine(argv)
  } catch (error) {
    // node:util parseArgs: an unknown option, or one without its value. Its advice to pass a
    // positional after '--' does not fit behind npm's own '--' (and its quote is unbalanced).
    if (error instanceof UsageError) throw error
    throw new UsageError((error as Error).message.replace(/\. To specify a positional .*$/s, ''))
  }
  const { rail, scheme, url, body } = parsed
  const toolName = parsed.toolName ?? (parsed.refund && !parsed.help ? 'hash' : undefined)
  if (toolName === undefined) {
    // Only `--help` alone gets here: without it, parseCommandLine asks for the tool.
    out.stdout(`${PAY_USAGE}\n`)
    return 0
  }
  const tool = findTool(toolName)
  if (!tool) {
    throw new UsageError(
      `unknown tool ${JSON.stringify(toolName)}; the tools are ${catalog.map((t) => t.id).join(', ')}`,
    )
  }
  if (parsed.help) {
    out.stdout(`${toolHelp(tool)}\n`)
    return 0
  }
  const keys = readKeys(rail, env)
  const channels = scheme === 'batch-settlement' ? readChannels(keys, env) : undefined
  const base = (url ?? env.SERVICE_URL ?? DEFAULT_SERVICE_URL).replace(/\/+$/, '')
  if (parsed.refund && channels) return refund(channels, `${base}${tool.path}`, out, fetchImpl)

  let paid = false
  // Payments signed: two when a channel's corrective 402 made the client resync and sign again.
  let signatures = 0
  // The paid request as the official client sent it, to resend it unchanged (same signature).
  let signedRequest: Request | undefined
  // Under the official client: stop at a 402 whose free input check failed (before the client
  // signs), and note whether a paid request went out, for the status line.
  const checked: typeof fetch = async (input, init) => {
    const request =
      input instanceof Request && init === undefined ? input : new Request(input, init)
    const signed = request.headers.has('PAYMENT-SIGNATURE')
    if (signed) {
      signedRequest = request.clone()
      signatures++
    }
    const res = await fetchImpl(request)
    paid ||= signed
    if (res.status === 402 && !signed) {
      const envelope = (await res
        .clone()
        .json()
        .catch(() => undefined)) as PaymentRequiredBody | undefined
      if (envelope?.input_check?.valid === false) throw new BodyRefused(envelope)
      const header = res.headers.get('PAYMENT-REQUIRED')
      if (channels && header) {
        const { accepts } = decodePaymentRequiredHeader(header)
        if (!accepts.some((a) => a.scheme === 'batch-settlement')) {
          throw new SchemeNotOffered(accepts.map((a) => `${a.scheme} on ${a.network}`))
        }
      }
    }
    return res
  }
  const client = wrapFetchWithPayment(checked, await payerClient(keys, rail, channels))
  const started = performance.now()
  let res: Response
  try {
    res = await client(`${base}${tool.path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body,
    })
  } catch (error) {
    if (error instanceof SchemeNotOffered) {
      out.stderr(
        `pay: the service offers no batch-settlement (it offers ${error.offered.join(', ') || 'nothing'}), ` +
          'so nothing was signed or paid: pay with --scheme exact\n',
      )
      return 1
    }
    if (!(error instanceof BodyRefused)) throw error
    const issues = (error.envelope.input_check?.errors ?? [])
      .map((e) => `  ${e.path || '(body)'}: ${e.message}\n`)
      .join('')
    out.stdout(`${JSON.stringify(error.envelope, null, 2)}\n`)
    out.stderr(
      `pay: the service's free input check refused the body, so nothing was signed or paid:\n${issues}`,
    )
    return 1
  }
  let retries = 0
  while (signedRequest && retries < retry.attempts && res.status >= 400) {
    const code = await codeOf(res)
    if (code === undefined || !RETRY_SAME_PAYMENT.has(code)) break
    const advised = parseRetryAfter(res.headers.get('Retry-After'))
    const wait = Math.min(advised ?? retry.defaultWaitSeconds, retry.maxWaitSeconds)
    retries++
    out.stderr(
      `pay: HTTP ${res.status} ${code}: the tool ran and the payment may have moved; resending ` +
        `the same payment (no new signature) in ${wait} s, retry ${retries} of ${retry.attempts}\n`,
    )
    await res.body?.cancel().catch(() => undefined)
    await retry.sleep(wait * 1000)
    res = await fetchImpl(signedRequest.clone())
  }
  const ms = Math.round(performance.now() - started)
  const resynced = signatures > 1 ? ' -> 402 (the channel resynced) -> sign -> paid request' : ''
  const flow = paid
    ? `402 -> sign -> paid request${resynced}${retries ? ` -> ${retries} resend${retries > 1 ? 's' : ''} of the same payment` : ''}`
    : 'no payment made'
  out.stderr(`HTTP ${res.status} in ${ms} ms (${flow})\n`)
  const unresolved = await codeOf(res)
  if (paid && unresolved !== undefined && RETRY_SAME_PAYMENT.has(unresolved)) {
    out.stderr(
      `pay: giving up after ${retries} resend${retries === 1 ? '' : 's'} of the same payment: its ` +
        'settlement is still unknown, so the payment may have moved. Retrying the same payment ' +
        'later is safe (the service never charges one payment twice), but running this command ' +
        'again signs a NEW payment, which would be charged again: check the payer balance first.\n',
    )
  } else if (retries > 0 && !res.ok) {
    out.stderr(
      `pay: the service refused the resent payment (${unresolved ?? `HTTP ${res.status}`}) after ` +
        'the outcome of its first settlement was unknown: the payment may have moved; check the ' +
        'payer balance before running this command again.\n',
    )
  }
  const header = res.headers.get('PAYMENT-RESPONSE')
  const settled = header ? decodePaymentResponseHeader(header) : undefined
  const sent = signedRequest?.headers.get('PAYMENT-SIGNATURE')
  const line =
    settled?.success && sent ? channelLine(settled, decodePaymentSignatureHeader(sent)) : undefined
  if (line) out.stderr(`${line}\n`)
  else if (settled) {
    out.stderr(
      `settled: ${settled.success} on ${settled.network}, transaction ${settled.transaction}\n`,
    )
  }
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    // Not the service's JSON (a proxy's page): stdout stays JSON-only, the text goes to stderr.
    out.stderr(`pay: the answer is not JSON: ${text.slice(0, 500)}\n`)
    return 1
  }
  if (settled && res.ok) {
    out.stderr(`${await checkReceipt(base, tool, body, settled, json as { result?: unknown })}\n`)
  }
  if (paid && res.status === 400 && !settled?.success) {
    // A tool's refusal of a paid call (docs/errors.md): the payment was verified, never settled.
    const code = (json as { code?: unknown }).code
    out.stderr(
      `pay: the tool refused the input${typeof code === 'string' ? ` (${code})` : ''}; ` +
        'the payment was not settled: nothing was charged\n',
    )
  }
  out.stdout(`${JSON.stringify(json, null, 2)}\n`)
  return res.ok ? 0 : 1
}

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')

/**
 * The delivery receipt of the answer (docs/receipts.md), verified with jose against the service's
 * JWKS, its digests compared with the body sent (the tool's defaults applied) and the result.
 */
async function checkReceipt(
  base: string,
  tool: ToolDefinition,
  body: string,
  settled: SettleResponse,
  answer: { result?: unknown },
): Promise<string> {
  const jws = (settled.extensions?.['delivery-receipt'] as { info?: { receipt?: string } })?.info
    ?.receipt
  if (!jws) return 'receipt: none in PAYMENT-RESPONSE'
  try {
    const keys = createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`))
    const { payload, protectedHeader } = await jwtVerify(jws, keys, {
      typ: 'delivery-receipt+jwt',
    })
    const input = tool.input.safeParse(JSON.parse(body))
    const inputOk = input.success && payload.input_sha256 === sha256(input.data)
    const resultOk = payload.result_sha256 === sha256(answer.result)
    return (
      `receipt: signed by the service (key ${protectedHeader.kid}); input digest ` +
      `${inputOk ? 'matches' : 'DIFFERS'}, result digest ${resultOk ? 'matches' : 'DIFFERS'}`
    )
  } catch (error) {
    return `receipt: NOT verified: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** The schemes `npm run pay` pays with (`--scheme`). */
const SCHEMES = ['exact', 'batch-settlement'] as const

function parseCommandLine(argv: readonly string[]) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      rail: { type: 'string', default: 'evm' },
      scheme: { type: 'string' },
      refund: { type: 'boolean', default: false },
      url: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  const [first, body = '{}', ...extra] = positionals
  // `npm run pay -- help` and `npm run pay -- help hash` read as `--help`.
  const help = values.help || first === 'help'
  const toolName = first === 'help' && positionals.length <= 2 ? positionals[1] : first
  const { refund } = values
  if (help) {
    return { help, refund, rail: 'evm', scheme: 'exact', url: values.url, toolName, body } as const
  }
  // A refund is of a prepaid channel: batch-settlement, Base, and no body to send.
  const scheme = values.scheme ?? (refund ? 'batch-settlement' : 'exact')
  if (!(SCHEMES as readonly string[]).includes(scheme)) {
    throw new UsageError(
      `--scheme must be exact or batch-settlement, not ${JSON.stringify(scheme)}`,
    )
  }
  if (refund && scheme !== 'batch-settlement') {
    throw new UsageError('--refund is of a prepaid channel: --scheme batch-settlement')
  }
  if (refund && positionals.length > 1) {
    throw new UsageError(
      `--refund takes a tool at most, not a body: ${positionals.slice(1).join(' ')}`,
    )
  }
  if (!toolName && !refund) throw new UsageError('name the tool to call')
  if (extra.length) throw new UsageError(`unexpected arguments after the body: ${extra.join(' ')}`)
  const rail = values.rail
  if (rail !== 'evm' && rail !== 'solana') {
    throw new UsageError(`--rail must be evm or solana, not ${JSON.stringify(rail)}`)
  }
  if (scheme === 'batch-settlement' && rail !== 'evm') {
    throw new UsageError('--scheme batch-settlement pays on Base only: --rail evm')
  }
  return {
    help,
    refund,
    rail,
    scheme: scheme as (typeof SCHEMES)[number],
    url: values.url,
    toolName,
    body,
  } as const
}

/**
 * `npm run pay -- --refund`: the official client's refund of the payer's channel with the service
 * (`scheme.refund(url)`: a GET on a paid route, then the same GET with a refund voucher on the
 * channel's charged amount); the service claims what was charged and the escrow sends the rest
 * back to the payer in one transaction. Prints the refund's SettleResponse on stdout.
 *
 * @returns 0 when refunded, 1 when refused (the SDK's message on stderr: e.g. nothing to refund)
 */
async function refund(
  channels: BatchSettlementEvmScheme,
  url: string,
  out: PayOutput,
  fetchImpl: typeof fetch,
): Promise<number> {
  let settled: SettleResponse
  try {
    settled = await channels.refund(url, { fetch: fetchImpl })
  } catch (error) {
    out.stderr(`pay: no refund: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
  const state = (settled.extra as { channelState?: { channelId?: string } } | undefined)
    ?.channelState
  const channel = state?.channelId ? ` of channel ${shortChannel(state.channelId)}` : ''
  out.stderr(
    `refunded${channel} on ${settled.network}: transaction ${settled.transaction}; what the ` +
      'service had not charged is back in the payer wallet\n',
  )
  out.stdout(`${JSON.stringify(settled, null, 2)}\n`)
  return 0
}
