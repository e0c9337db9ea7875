import { availableParallelism } from 'node:os'
import { z } from 'zod'

const evmAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address')
const solanaAddress = z
  .string()
  .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana public key')
const optionalUrl = z
  .string()
  .url()
  .optional()
  .transform((v) => (v ? v.replace(/\/+$/, '') : undefined))
/** A JSON-RPC endpoint: http(s) only, kept as given (it may carry a key in its path). */
const rpcUrl = z
  .string()
  .url()
  .regex(/^https?:\/\//, 'must be an http:// or https:// URL')
  .optional()
/** A comma-separated list; unset or empty -> undefined (the consumer's defaults apply). */
const commaList = (item: z.ZodString) =>
  z
    .string()
    .optional()
    .transform((v) =>
      v
        ?.split(',')
        .map((part) => part.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item).min(1).optional())
/**
 * A facilitator's base URL: http(s), without credentials, query or fragment (a key in a URL would
 * show in logs and health; keys go in FACILITATOR_AUTH's variables).
 */
const facilitatorUrl = z
  .string()
  .url()
  .refine((value) => {
    const url = new URL(value)
    return (
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      !url.username &&
      !url.password &&
      !url.search &&
      !url.hash
    )
  }, 'each entry must be an http(s) URL without credentials, query or fragment (credentials go in FACILITATOR_AUTH)')
/** How each facilitator authenticates our requests (see src/facilitators/auth.ts). */
const FACILITATOR_AUTH_MODES = ['none', 'cdp', 'payai'] as const
/** An API key's part: trimmed; never echoed in an error. */
const apiKeyPart = z.string().trim().min(1).optional()
const hostName = z
  .string()
  .regex(
    /^(?:\*|[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/,
    'each entry must be "*" or a host name (port ignored)',
  )
const origin = z
  .string()
  .regex(/^(?:\*|https?:\/\/[^/?#\s]+\/?)$/, 'each entry must be "*" or an http(s) origin')
/** An EIP-712 domain name or version: printable text, as a token's contract returns it. */
const eip712Field = z
  .string()
  .max(64)
  .regex(/^[\x20-\x7e]+$/, "must be printable ASCII (the token contract's EIP-712 name or version)")
/** A signature as x402scan reads it: 0x-hex (EVM, EIP-191) or base58 (Solana, ed25519). */
const ownershipProof = z
  .string()
  .regex(
    /^(?:0x(?:[0-9a-fA-F]{2})+|[1-9A-HJ-NP-Za-km-z]{64,100})$/,
    'each entry must be a 0x-hex or base58 signature',
  )

/** An amount of USDC in decimal (at most 6 decimals), e.g. `1` or `0.25`. */
const usdcAmount = z
  .string()
  .regex(/^(?:0|[1-9][0-9]{0,8})(?:\.[0-9]{1,6})?$/, 'must be a USDC amount such as 1 or 0.25')
/** A secp256k1 private key as 0x-prefixed hex; never echoed in an error. */
const privateKeyHex = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte hex private key')

/**
 * Environment variables, parsed once. The README's config table lists exactly these.
 * Empty strings count as unset.
 */
const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8402),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_BASE_URL: optionalUrl,
  FACILITATOR_URL: commaList(facilitatorUrl),
  FACILITATOR_TIMEOUT_MS: z.coerce.number().int().positive().max(600_000).default(4_000),
  FACILITATOR_SETTLE_TIMEOUT_MS: z.coerce.number().int().positive().max(600_000).default(20_000),
  EVM_RPC_URL: rpcUrl,
  SOLANA_RPC_URL: rpcUrl,
  FACILITATOR_AUTH: z
    .string()
    .optional()
    .transform((v) => v?.split(',').map((part) => part.trim().toLowerCase()))
    .pipe(z.array(z.enum(FACILITATOR_AUTH_MODES)).min(1).optional()),
  CDP_API_KEY_ID: apiKeyPart,
  CDP_API_KEY_SECRET: apiKeyPart,
  PAYAI_API_KEY_ID: apiKeyPart,
  PAYAI_API_KEY_SECRET: apiKeyPart,
  X402_NETWORK: z.enum(['mainnet', 'testnet']).default('mainnet'),
  PAY_TO_EVM: evmAddress.optional(),
  PAY_TO_SOLANA: solanaAddress.optional(),
  USDC_EVM: evmAddress.optional(),
  USDC_EVM_NAME: eip712Field.optional(),
  USDC_EVM_VERSION: eip712Field.optional(),
  USDC_SOLANA: solanaAddress.optional(),
  SOLANA_NETWORK: z
    .string()
    .regex(/^solana:[1-9A-HJ-NP-Za-km-z]{32}$/, 'must be a CAIP-2 solana network')
    .optional(),
  RAIL_ORDER: z.enum(['evm,solana', 'solana,evm']).default('evm,solana'),
  X402_DEVNET: z.enum(['on', 'off']).default('off'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Read by src/logger.ts itself, before the configuration: checked here all the same.
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  DATABASE_URL: z.string().optional(),
  TELEMETRY_SALT: z.string().min(16, 'must be at least 16 characters').optional(),
  TELEMETRY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  MCP_ALLOWED_HOSTS: commaList(hostName),
  MCP_ALLOWED_ORIGINS: commaList(origin),
  X402_OWNERSHIP_PROOFS: commaList(ownershipProof),
  TOOL_WORKERS: z.coerce.number().int().min(1).max(256).optional(),
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(2_000),
  TOOL_QUEUE_LIMIT: z.coerce.number().int().min(0).max(10_000).optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
    .optional(),
  REDIS_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  REPLAY_LIMIT: z.coerce.number().int().min(0).max(100).default(3),
  RATE_LIMIT_POINTS: z.coerce.number().int().min(0).max(1_000_000).default(120),
  RATE_LIMIT_DURATION_S: z.coerce.number().int().min(1).max(86_400).default(60),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(4096),
  MAX_CONNECTIONS_PER_CLIENT: z.coerce.number().int().min(0).max(1_000_000).optional(),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  RECEIPT_SIGNING_KEY: z.string().optional(),
  RECEIPT_RETIRED_KEYS: z.string().optional(),
  METRICS_TOKEN: z
    .string()
    .regex(
      /^[A-Za-z0-9._~+/-]{32,256}$/,
      'must be 32 to 256 characters of A-Z a-z 0-9 . _ ~ + / - (a bearer token)',
    )
    .optional(),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  BATCH_SETTLEMENT: z.enum(['on', 'off']).optional(),
  BATCH_SETTLEMENT_MIN_DEPOSIT: usdcAmount.default('1'),
  BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY: privateKeyHex.optional(),
  BATCH_SETTLEMENT_WITHDRAW_DELAY_S: z.coerce
    .number()
    .int()
    .min(900)
    .max(31_536_000)
    .default(86_400),
  BATCH_SETTLEMENT_CLAIM_INTERVAL_S: z.coerce.number().int().min(1).max(86_400).default(60),
  BATCH_SETTLEMENT_SETTLE_INTERVAL_S: z.coerce.number().int().min(1).max(604_800).default(300),
  BATCH_SETTLEMENT_IDLE_REFUND_S: z.coerce.number().int().min(60).max(31_536_000).default(86_400),
})

/** Tool calls that may queue per worker beyond the one it runs (the default TOOL_QUEUE_LIMIT). */
export const QUEUE_PER_WORKER = 2

/**
 * Connections one client may hold open at once when the service faces its clients
 * (TRUST_PROXY_HOPS 0): the default MAX_CONNECTIONS_PER_CLIENT.
 */
export const CONNECTIONS_PER_CLIENT = 64

/**
 * The defaults that depend on the machine or on another variable, as the README words them.
 * `loadConfig` computes them; the README test checks the wording.
 */
export const DERIVED_DEFAULTS: Record<string, string> = {
  PUBLIC_BASE_URL: '`http://HOST:PORT`',
  USDC_EVM: 'per `X402_NETWORK`',
  USDC_EVM_NAME: 'per `X402_NETWORK`',
  USDC_EVM_VERSION: 'per `X402_NETWORK`',
  USDC_SOLANA: 'per `SOLANA_NETWORK`',
  SOLANA_NETWORK: 'per `X402_NETWORK`',
  TOOL_WORKERS: 'number of cores',
  TOOL_QUEUE_LIMIT: `${QUEUE_PER_WORKER} × \`TOOL_WORKERS\``,
  BATCH_SETTLEMENT: '`on` when `PAY_TO_EVM` is set',
  MAX_CONNECTIONS_PER_CLIENT: `\`${CONNECTIONS_PER_CLIENT}\`; \`0\` when \`TRUST_PROXY_HOPS\` > 0`,
}

/** Names of every environment variable the service reads (the README's config table). */
export const CONFIG_VARIABLES = Object.keys(envSchema.shape)

/** The defaults of the variables that have one, as parsed values. */
export const CONFIG_DEFAULTS: Record<string, unknown> = envSchema.parse({})

/** How a facilitator authenticates our requests: FACILITATOR_AUTH's modes. */
export type FacilitatorAuthMode = (typeof FACILITATOR_AUTH_MODES)[number]

/** Parsed service configuration. Amounts are atomic USDC; durations are milliseconds. */
export interface Config {
  port: number
  host: string
  /** Base URL used in `resource.url` and discovery documents, without a trailing slash. */
  publicBaseUrl: string
  /**
   * The x402 v2 facilitators in order of preference (FACILITATOR_URL, base URLs without a trailing
   * slash), each with its auth mode (FACILITATOR_AUTH, `none` by default). Empty: fail-closed
   * (every paid call answers 503).
   */
  facilitators: { url: string; auth: FacilitatorAuthMode }[]
  /** Upper bound for each facilitator verify and `/supported` request, in milliseconds. */
  facilitatorTimeoutMs: number
  /**
   * FACILITATOR_SETTLE_TIMEOUT_MS: upper bound of one settlement, in milliseconds, shared by all its
   * attempts (failover, the SDK's one `settlement_pending` retry): a settle waits for a block.
   */
  facilitatorSettleTimeoutMs: number
  /** EVM_RPC_URL: JSON-RPC of the Base rail's chain, to judge settlements in doubt; optional. */
  evmRpcUrl?: string | undefined
  /** SOLANA_RPC_URL: JSON-RPC of the Solana rail's cluster, to judge settlements in doubt. */
  solanaRpcUrl?: string | undefined
  /** CDP API key (CDP_API_KEY_ID, CDP_API_KEY_SECRET), sent only to `cdp` facilitators. */
  cdpApiKey?: { id: string; secret: string } | undefined
  /** PayAI API key (PAYAI_API_KEY_ID, PAYAI_API_KEY_SECRET), sent only to `payai` facilitators. */
  payaiApiKey?: { id: string; secret: string } | undefined
  /**
   * `X402_NETWORK`: `mainnet` (Base, Solana) or `testnet` (Base Sepolia, Solana devnet). The
   * rails take their networks, USDC and EIP-712 domain from it (src/payment/networks.ts) unless
   * the variables below are set.
   */
  stage: 'mainnet' | 'testnet'
  /** Receiving address on Base; undefined leaves the EVM rail out of every 402. */
  payToEvm: string | undefined
  /** Receiving address on Solana; undefined leaves the Solana rail out of every 402. */
  payToSolana: string | undefined
  /** USDC contract on the EVM rail (EIP-3009, 6 decimals); undefined: the stage's. */
  usdcEvm: string | undefined
  /** EIP-712 domain name of `usdcEvm`; undefined: the stage's ("USD Coin" or "USDC"). */
  usdcEvmName: string | undefined
  /** EIP-712 domain version of `usdcEvm`; undefined: the stage's ("2"). */
  usdcEvmVersion: string | undefined
  /** USDC mint on Solana (SPL Token, 6 decimals); undefined: that of the Solana network. */
  usdcSolana: string | undefined
  /** CAIP-2 network of the Solana rail; undefined: the stage's. */
  solanaNetwork: string | undefined
  /** Order of the rails in `accepts`. */
  railOrder: readonly ('evm' | 'solana')[]
  /** X402_DEVNET: the rails' networks are simulated on a local devnet (npm run dev, the tests). */
  devnet: boolean
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL']
  /**
   * Telemetry store: unset or a file path -> SQLite (./data/telemetry.sqlite by default);
   * postgres:// or postgresql:// -> PostgreSQL shared by every instance.
   */
  databaseUrl?: string | undefined
  /**
   * HMAC-SHA-256 key for payer keys in telemetry. Must be set in production and shared by all
   * instances; unset -> a dev salt generated and kept in ./data/telemetry-salt.
   */
  telemetrySalt?: string | undefined
  /**
   * Days of raw payment events to keep (1 to 36,500); older ones are pruned hourly in small
   * batches. The /stats rollups are kept for ever, so pruning changes no figure. Undefined: raw
   * events are kept for ever.
   */
  telemetryRetentionDays?: number | undefined
  /**
   * Hostnames `/mcp` accepts in `Host` (DNS-rebinding protection); `"*"` accepts any. Undefined:
   * the PUBLIC_BASE_URL hostname, loopback names and a specific HOST (src/mcp/dns-rebinding.ts).
   */
  mcpAllowedHosts?: string[] | undefined
  /**
   * Origins `/mcp` accepts in `Origin` when a browser sends one; `"*"` accepts any. Undefined: the
   * PUBLIC_BASE_URL origin and http://{localhost,127.0.0.1,[::1]}:PORT.
   */
  mcpAllowedOrigins?: string[] | undefined
  /**
   * Signatures over the origin string (the PUBLIC_BASE_URL origin, no trailing slash) by the payTo
   * keys, published verbatim as `ownershipProofs` in /.well-known/x402. Undefined: none published.
   */
  ownershipProofs?: string[] | undefined
  /** Worker threads running tool calls at once (one call each); default: the number of cores. */
  toolWorkers: number
  /** Time budget of one tool call on a worker, in milliseconds; beyond it: `tool_timeout`. */
  toolTimeoutMs: number
  /**
   * Tool calls that may wait for a worker beyond one per worker: with that many queued, a new paid
   * call answers 503 `overloaded` before verify; it also sets the queue deadline
   * (`max(1, ceil(queue / workers))` budgets). Default: {@link QUEUE_PER_WORKER} per worker.
   */
  toolQueueLimit: number
  /** Longest graceful shutdown after SIGTERM or SIGINT, in milliseconds; then exit 1. */
  shutdownTimeoutMs: number
  /**
   * Redis shared by every instance (`redis://` or `rediss://`); undefined: in-process state, for a
   * single instance only.
   */
  redisUrl?: string | undefined
  /** Upper bound for each Redis command and for connecting, in milliseconds. */
  redisTimeoutMs: number
  /**
   * Times one settled payment (or `payment-identifier` id) may be answered again within its
   * 120 s window, for its own payer and the same call; beyond: 402 `duplicate_settlement`.
   */
  replayLimit: number
  /**
   * Unpaid requests (402s, discovery, /stats, /, MCP messages, refused payments, replays) one
   * client may make per window; 0 disables the limit. A fresh payment is never refused by it, and
   * each settled one gives back two points (src/http/rate-limit.ts).
   */
  rateLimitPoints: number
  /** Length of the rate-limit window, in seconds. */
  rateLimitDurationS: number
  /**
   * Proxies in front of the service that append to `X-Forwarded-For` (1 behind the shipped
   * nginx); 0: the header is ignored and the client is the socket address
   * (src/http/client-address.ts).
   */
  trustProxyHops: number
  /**
   * MAX_CONNECTIONS: connections one instance holds open at once, in all; beyond, a new one is
   * closed at once (src/http/connection-limit.ts).
   */
  maxConnections: number
  /**
   * MAX_CONNECTIONS_PER_CLIENT: connections one client (an IPv4 address, an IPv6 /64, by the
   * socket's peer) holds open at once; beyond, a new one is reset as it is accepted. 0: no cap per
   * client, the default behind a proxy (TRUST_PROXY_HOPS > 0), whose own address every connection
   * comes from: there the proxy caps each client (deploy/nginx.conf `limit_conn`).
   */
  maxConnectionsPerClient: number
  /**
   * Ed25519 private key (JWK or PKCS#8 PEM) that signs receipts and offers (src/receipts). Must be
   * set in production, the same on every instance; unset -> a dev key generated and kept in
   * ./data/receipt-signing-key.
   */
  receiptSigningKey?: string | undefined
  /**
   * Public keys of retired signing keys (JWKs as JSON, a JWKS, or SPKI PEMs), still published in
   * the JWKS so that the receipts they signed keep verifying.
   */
  receiptRetiredKeys?: string | undefined
  /**
   * Bearer token that opens `GET /metrics` on the service's port (Prometheus text format);
   * undefined: `/metrics` there answers 404 like any unknown path.
   */
  metricsToken?: string | undefined
  /**
   * Port of a listener of its own serving `GET /metrics` (bound to {@link metricsHost}), e.g. on a
   * private interface; undefined: no such listener. With neither this nor the token, no metrics
   * are recorded at all.
   */
  metricsPort?: number | undefined
  /** Address the metrics listener binds (METRICS_PORT). */
  metricsHost: string
  /** Prepaid channels (x402 `batch-settlement`) on the Base rail: src/channels/. */
  batchSettlement: BatchSettlementConfig
}

/** BATCH_SETTLEMENT_*: the prepaid channels offered beside `exact` on Base. */
export interface BatchSettlementConfig {
  /** BATCH_SETTLEMENT: offered (when its escrow check passes); default on with PAY_TO_EVM. */
  enabled: boolean
  /** The smallest deposit a payer is asked for, in atomic USDC (from BATCH_SETTLEMENT_MIN_DEPOSIT). */
  minDeposit: string
  /** The receiver-authorizer's private key, the same on every instance; unset: a dev key in ./data. */
  receiverAuthorizerKey?: `0x${string}` | undefined
  /** Seconds a payer's withdrawal waits before it can take the unclaimed rest (at least 900). */
  withdrawDelaySeconds: number
  /** Seconds between claims of the vouchers accepted. */
  claimIntervalSeconds: number
  /** Seconds between settlements of the claimed funds to payTo. */
  settleIntervalSeconds: number
  /** Seconds without a request after which a channel's unclaimed rest is refunded to its payer. */
  idleRefundSeconds: number
}

/**
 * Reads the configuration from environment variables.
 *
 * @param env - variables to read, `process.env` by default
 * @returns the parsed configuration
 * @throws {Error} naming every invalid variable
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ''),
  )
  const parsed = envSchema.safeParse(cleaned)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
    throw new Error(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  }
  const e = parsed.data
  const facilitators = facilitatorsOf(e)
  const toolWorkers = e.TOOL_WORKERS ?? availableParallelism()
  return {
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: e.PUBLIC_BASE_URL ?? `http://${e.HOST}:${e.PORT}`,
    facilitators,
    facilitatorTimeoutMs: e.FACILITATOR_TIMEOUT_MS,
    facilitatorSettleTimeoutMs: e.FACILITATOR_SETTLE_TIMEOUT_MS,
    evmRpcUrl: e.EVM_RPC_URL,
    solanaRpcUrl: e.SOLANA_RPC_URL,
    cdpApiKey: apiKey(e.CDP_API_KEY_ID, e.CDP_API_KEY_SECRET),
    payaiApiKey: apiKey(e.PAYAI_API_KEY_ID, e.PAYAI_API_KEY_SECRET),
    stage: e.X402_NETWORK,
    payToEvm: e.PAY_TO_EVM,
    payToSolana: e.PAY_TO_SOLANA,
    usdcEvm: e.USDC_EVM,
    usdcEvmName: e.USDC_EVM_NAME,
    usdcEvmVersion: e.USDC_EVM_VERSION,
    usdcSolana: e.USDC_SOLANA,
    solanaNetwork: e.SOLANA_NETWORK,
    railOrder: e.RAIL_ORDER.split(',') as ('evm' | 'solana')[],
    devnet: e.X402_DEVNET === 'on',
    logLevel: e.LOG_LEVEL,
    databaseUrl: e.DATABASE_URL,
    telemetrySalt: e.TELEMETRY_SALT,
    telemetryRetentionDays: e.TELEMETRY_RETENTION_DAYS,
    mcpAllowedHosts: e.MCP_ALLOWED_HOSTS,
    mcpAllowedOrigins: e.MCP_ALLOWED_ORIGINS,
    ownershipProofs: e.X402_OWNERSHIP_PROOFS,
    toolWorkers,
    toolTimeoutMs: e.TOOL_TIMEOUT_MS,
    toolQueueLimit: e.TOOL_QUEUE_LIMIT ?? QUEUE_PER_WORKER * toolWorkers,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    replayLimit: e.REPLAY_LIMIT,
    rateLimitPoints: e.RATE_LIMIT_POINTS,
    rateLimitDurationS: e.RATE_LIMIT_DURATION_S,
    trustProxyHops: e.TRUST_PROXY_HOPS,
    maxConnections: e.MAX_CONNECTIONS,
    maxConnectionsPerClient: connectionsPerClient(e),
    receiptSigningKey: e.RECEIPT_SIGNING_KEY,
    receiptRetiredKeys: e.RECEIPT_RETIRED_KEYS,
    metricsToken: e.METRICS_TOKEN,
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    batchSettlement: {
      enabled: (e.BATCH_SETTLEMENT ?? (e.PAY_TO_EVM ? 'on' : 'off')) === 'on',
      minDeposit: atomicUsdc(e.BATCH_SETTLEMENT_MIN_DEPOSIT),
      receiverAuthorizerKey: e.BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY as
        | `0x${string}`
        | undefined,
      withdrawDelaySeconds: e.BATCH_SETTLEMENT_WITHDRAW_DELAY_S,
      claimIntervalSeconds: e.BATCH_SETTLEMENT_CLAIM_INTERVAL_S,
      settleIntervalSeconds: e.BATCH_SETTLEMENT_SETTLE_INTERVAL_S,
      idleRefundSeconds: e.BATCH_SETTLEMENT_IDLE_REFUND_S,
    },
  }
}

/** A decimal USDC amount (`1`, `0.25`) in atomic units (6 decimals), as a string. */
function atomicUsdc(decimal: string): string {
  const [whole, fraction = ''] = decimal.split('.')
  return (BigInt(whole ?? '0') * 1_000_000n + BigInt(fraction.padEnd(6, '0'))).toString()
}

/**
 * MAX_CONNECTIONS_PER_CLIENT, or its default: {@link CONNECTIONS_PER_CLIENT} (at most
 * MAX_CONNECTIONS) facing clients, 0 behind a proxy (TRUST_PROXY_HOPS > 0).
 *
 * @throws {Error} when it is set above MAX_CONNECTIONS (a cap per client never reached)
 */
function connectionsPerClient(e: z.infer<typeof envSchema>): number {
  const set = e.MAX_CONNECTIONS_PER_CLIENT
  if (set === undefined) {
    return e.TRUST_PROXY_HOPS > 0 ? 0 : Math.min(CONNECTIONS_PER_CLIENT, e.MAX_CONNECTIONS)
  }
  if (set > e.MAX_CONNECTIONS) {
    throw new Error(
      `Invalid configuration:\n  MAX_CONNECTIONS_PER_CLIENT: ${set} exceeds MAX_CONNECTIONS (${e.MAX_CONNECTIONS}); set it at most that, or 0 for no cap per client`,
    )
  }
  return set
}

function apiKey(id: string | undefined, secret: string | undefined) {
  return id && secret ? { id, secret } : undefined
}

/**
 * FACILITATOR_URL paired with FACILITATOR_AUTH, checked together: the same length, no URL twice,
 * and the keys of every auth mode in use.
 *
 * @throws {Error} naming the variables, never a key's value
 */
function facilitatorsOf(e: z.infer<typeof envSchema>): Config['facilitators'] {
  const urls = (e.FACILITATOR_URL ?? []).map((url) => url.replace(/\/+$/, ''))
  const auths = e.FACILITATOR_AUTH ?? urls.map(() => 'none' as const)
  const problems: string[] = []
  if (auths.length !== urls.length) {
    problems.push(
      `FACILITATOR_AUTH: lists ${auths.length} auth mode(s) for the ${urls.length} facilitator(s) of FACILITATOR_URL; give one per facilitator, in the same order`,
    )
  }
  const twice = urls.find((url, i) => urls.indexOf(url) !== i)
  if (twice) problems.push(`FACILITATOR_URL: lists ${twice} twice`)
  const keys = {
    cdp: ['CDP_API_KEY_ID', 'CDP_API_KEY_SECRET', e.CDP_API_KEY_ID, e.CDP_API_KEY_SECRET],
    payai: ['PAYAI_API_KEY_ID', 'PAYAI_API_KEY_SECRET', e.PAYAI_API_KEY_ID, e.PAYAI_API_KEY_SECRET],
  } as const
  for (const mode of ['cdp', 'payai'] as const) {
    const users = urls.filter((_, i) => auths[i] === mode).map((url) => new URL(url).host)
    const [idName, secretName, id, secret] = keys[mode]
    const missing = [id ? undefined : idName, secret ? undefined : secretName].filter(Boolean)
    if (users.length > 0 && missing.length > 0) {
      problems.push(
        `${missing.join(', ')}: required by FACILITATOR_AUTH ${mode} (for ${users.join(', ')}); without ${missing.length > 1 ? 'them' : 'it'} every request to it would go unauthenticated`,
      )
    }
  }
  if (problems.length > 0) throw new Error(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  return urls.map((url, i) => ({ url, auth: auths[i] ?? 'none' }))
}
