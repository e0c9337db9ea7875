import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { BASE_MAINNET_RPC_URL } from './channels.js'
import { type RailId, SOLANA_MAINNET_RPC_URL } from './rails.js'
import { parseUsdc } from './usdc.js'

/**
 * The public base URL of Payload Tools, used when `PAYLOAD_TOOLS_URL` is unset. `undefined` until
 * a public deployment is published in our docs: a bridge that signs payments must never guess a
 * host that might not be ours, so until then `PAYLOAD_TOOLS_URL` is required.
 */
export const DEFAULT_SERVICE_URL: string | undefined = undefined

/** Every environment variable the bridge reads, in the order of the README's table. */
export const BRIDGE_VARIABLES = [
  'PAYLOAD_TOOLS_URL',
  'PAYER_PRIVATE_KEY',
  'PAYER_SOLANA_SECRET_KEY',
  'PAYER_RAIL',
  'SOLANA_RPC_URL',
  'BASE_RPC_URL',
  'MAX_USDC_PER_CALL',
  'MAX_USDC_PER_SESSION',
  'MAX_USDC_PER_DAY',
  'MAX_USDC_DEPOSIT',
] as const

/** Default of `MAX_USDC_PER_CALL`, in USDC. */
export const DEFAULT_MAX_PER_CALL = '0.01'
/** Default of `MAX_USDC_PER_SESSION`, in USDC. */
export const DEFAULT_MAX_PER_SESSION = '0.10'
/** Default of `MAX_USDC_DEPOSIT`, in USDC: the service's default `minDeposit`. */
export const DEFAULT_MAX_DEPOSIT = '1'

/** Spend caps in atomic USDC units (6 decimals); `perDay` is optional. */
export interface Caps {
  perCall: bigint
  perSession: bigint
  perDay?: bigint
}

/** Everything the bridge reads from its environment, parsed and checked. */
export interface BridgeConfig {
  /** Base URL of the service, without trailing slash (e.g. `https://tools.example`). */
  serviceUrl: string
  /** The service's MCP endpoint, `<serviceUrl>/mcp`. */
  mcpUrl: URL
  /** EVM private key (Base rail). Never logged. */
  evmPrivateKey?: Hex
  /** Solana 64-byte secret key (seed and public key). Never logged. */
  solanaSecretKey?: Uint8Array
  /** Solana JSON-RPC the SVM client scheme reads the USDC mint and a recent blockhash from. */
  solanaRpcUrl: string
  /** Base JSON-RPC the channel client reads the escrow from (a channel's deposit, refunds). */
  baseRpcUrl: string
  /**
   * `MAX_USDC_DEPOSIT` in atomic units: the largest deposit into a prepaid channel
   * (`batch-settlement` on Base); 0: the bridge never opens one and pays every call `exact`.
   */
  depositCap: bigint
  /** The rail to pay on when the service offers both; `undefined`: the service's order. */
  preferredRail?: RailId
  caps: Caps
  /** Directory of the day-spend state file. */
  stateDir: string
}

/**
 * A missing or malformed environment variable. The message names the variable and how to fix it,
 * and never quotes the value of a key.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
  }
}

/** Environment variables, as `process.env` holds them; empty values count as unset. */
export type Env = Record<string, string | undefined>

const read = (env: Env, name: string): string | undefined => {
  const value = env[name]?.trim()
  return value ? value : undefined
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * Reads the service URL: `https://…`, or `http://…` on a loopback host only (a plain-HTTP 402 from
 * elsewhere could be rewritten on the way to name another payTo). A trailing `/mcp` is accepted.
 *
 * @throws {ConfigError} when unset (and no public default exists) or not such a URL
 */
function serviceUrlFrom(env: Env): { serviceUrl: string; mcpUrl: URL } {
  const raw = read(env, 'PAYLOAD_TOOLS_URL') ?? DEFAULT_SERVICE_URL
  if (raw === undefined) {
    throw new ConfigError(
      'PAYLOAD_TOOLS_URL',
      'not set. Set it to the base URL of the Payload Tools service you want to pay, e.g. ' +
        'PAYLOAD_TOOLS_URL=https://<host> (its MCP endpoint is <host>/mcp)',
    )
  }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError('PAYLOAD_TOOLS_URL', `not a URL: ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    throw new ConfigError(
      'PAYLOAD_TOOLS_URL',
      `must be https:// (plain http:// only on localhost, 127.0.0.1 or [::1]), got ${url.origin}`,
    )
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new ConfigError('PAYLOAD_TOOLS_URL', 'must not carry credentials, a query or a fragment')
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/mcp$/, '')
  const serviceUrl = `${url.origin}${path}`
  return { serviceUrl, mcpUrl: new URL(`${serviceUrl}/mcp`) }
}

function evmKeyFrom(env: Env): Hex | undefined {
  const raw = read(env, 'PAYER_PRIVATE_KEY')
  if (raw === undefined) return undefined
  const hex = raw.startsWith('0x') || raw.startsWith('0X') ? raw.slice(2) : raw
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new ConfigError(
      'PAYER_PRIVATE_KEY',
      'must be 32 bytes of hex (64 hex digits, 0x optional)',
    )
  }
  return `0x${hex.toLowerCase()}` as Hex
}

/** Base58 (as wallets export it) or the JSON byte array of a `solana-keygen` key file. */
async function solanaKeyFrom(env: Env): Promise<Uint8Array | undefined> {
  const raw = read(env, 'PAYER_SOLANA_SECRET_KEY')
  if (raw === undefined) return undefined
  const problem = 'must be the 64-byte secret key, in base58 or as a JSON array of 64 bytes'
  let bytes: Uint8Array
  try {
    if (raw.startsWith('[')) {
      const array: unknown = JSON.parse(raw)
      if (
        !Array.isArray(array) ||
        !array.every((b) => Number.isInteger(b) && (b as number) >= 0 && (b as number) <= 255)
      ) {
        throw new Error('not bytes')
      }
      bytes = Uint8Array.from(array as number[])
    } else {
      // Loaded only for a Solana wallet: @solana/kit is a large part of the start-up time.
      const { getBase58Encoder } = await import('@solana/kit')
      bytes = new Uint8Array(getBase58Encoder().encode(raw))
    }
  } catch {
    // The library's message may quote the offending characters of the key: not repeated here.
    throw new ConfigError('PAYER_SOLANA_SECRET_KEY', problem)
  }
  if (bytes.length !== 64) throw new ConfigError('PAYER_SOLANA_SECRET_KEY', problem)
  return bytes
}

function capFrom(env: Env, name: string, fallback: string): bigint
function capFrom(env: Env, name: string, fallback?: string): bigint | undefined
function capFrom(env: Env, name: string, fallback?: string): bigint | undefined {
  const raw = read(env, name) ?? fallback
  if (raw === undefined) return undefined
  try {
    return parseUsdc(raw)
  } catch {
    throw new ConfigError(
      name,
      `must be a USDC amount with at most 6 decimals, e.g. "0.05", got ${JSON.stringify(raw)}`,
    )
  }
}

/** An RPC URL: http(s), no credentials in a form the logs could show. */
function rpcUrlFrom(env: Env, name: string, fallback: string): string {
  const raw = read(env, name) ?? fallback
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(name, 'not a URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(name, `must be an http:// or https:// URL, got ${url.protocol}`)
  }
  return raw
}

function railFrom(env: Env, evm: boolean, solana: boolean): RailId | undefined {
  const raw = read(env, 'PAYER_RAIL')?.toLowerCase()
  if (raw === undefined) return undefined
  const rail: RailId | undefined =
    raw === 'base' || raw === 'evm' ? 'base' : raw === 'solana' ? 'solana' : undefined
  if (!rail) throw new ConfigError('PAYER_RAIL', `must be "base" or "solana", got "${raw}"`)
  if (rail === 'base' && !evm) {
    throw new ConfigError('PAYER_RAIL', '"base" needs PAYER_PRIVATE_KEY')
  }
  if (rail === 'solana' && !solana) {
    throw new ConfigError('PAYER_RAIL', '"solana" needs PAYER_SOLANA_SECRET_KEY')
  }
  return rail
}

/**
 * The directory of the bridge's state: `%APPDATA%\payload-tools-mcp` on Windows, else
 * `$XDG_CONFIG_HOME/payload-tools-mcp` or `~/.config/payload-tools-mcp`.
 */
export function stateDirFrom(env: Env, platform: string = process.platform, home = homedir()) {
  const appData = read(env, 'APPDATA')
  if (platform === 'win32' && appData) return join(appData, 'payload-tools-mcp')
  return join(read(env, 'XDG_CONFIG_HOME') ?? join(home, '.config'), 'payload-tools-mcp')
}

/**
 * Reads and checks the bridge's environment (README, "Use from an MCP client").
 *
 * @example
 * (await loadConfig({ PAYLOAD_TOOLS_URL: 'https://tools.example', PAYER_PRIVATE_KEY: '0x…' })).caps
 * // { perCall: 10000n, perSession: 100000n, perDay: undefined }
 * @param env - the environment, `process.env` by default
 * @throws {ConfigError} (rejects) naming the first variable that is missing or malformed
 */
export async function loadConfig(env: Env = process.env): Promise<BridgeConfig> {
  const { serviceUrl, mcpUrl } = serviceUrlFrom(env)
  const evmPrivateKey = evmKeyFrom(env)
  const solanaSecretKey = await solanaKeyFrom(env)
  if (!evmPrivateKey && !solanaSecretKey) {
    throw new ConfigError(
      'PAYER_PRIVATE_KEY',
      'no wallet: set PAYER_PRIVATE_KEY (Base) or PAYER_SOLANA_SECRET_KEY (Solana), or both',
    )
  }
  const perDay = capFrom(env, 'MAX_USDC_PER_DAY')
  return {
    serviceUrl,
    mcpUrl,
    ...(evmPrivateKey ? { evmPrivateKey } : {}),
    ...(solanaSecretKey ? { solanaSecretKey } : {}),
    solanaRpcUrl: read(env, 'SOLANA_RPC_URL') ?? SOLANA_MAINNET_RPC_URL,
    baseRpcUrl: rpcUrlFrom(env, 'BASE_RPC_URL', BASE_MAINNET_RPC_URL),
    depositCap: capFrom(env, 'MAX_USDC_DEPOSIT', DEFAULT_MAX_DEPOSIT),
    preferredRail: railFrom(env, Boolean(evmPrivateKey), Boolean(solanaSecretKey)),
    caps: {
      perCall: capFrom(env, 'MAX_USDC_PER_CALL', DEFAULT_MAX_PER_CALL),
      perSession: capFrom(env, 'MAX_USDC_PER_SESSION', DEFAULT_MAX_PER_SESSION),
      ...(perDay === undefined ? {} : { perDay }),
    },
    stateDir: stateDirFrom(env),
  }
}
