import { type ChildProcess, spawn } from 'node:child_process'
import { pbkdf2Sync } from 'node:crypto'
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Address, type Hex, toHex } from 'viem'
import { HDKey, privateKeyToAccount } from 'viem/accounts'
import { logger } from '../logger.js'
import { freePort } from './ports.js'

/** Base mainnet's EVM chain id; the devnet answers with it so EIP-712 domains match Base's. */
export const BASE_CHAIN_ID = 8453

/** Anvil's default dev mnemonic. Public knowledge: never fund its accounts on a real chain. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk'

/** One of anvil's dev accounts (BIP-44 path m/44'/60'/0'/0/index of {@link DEV_MNEMONIC}). */
export interface DevAccount {
  address: Address
  /** 32-byte secp256k1 key, 0x-prefixed hex. */
  privateKey: Hex
}

let devMasterKey: HDKey | undefined

/**
 * Derives anvil dev account `index` (0–9 are pre-funded with 10 000 ETH by {@link startAnvil}).
 *
 * @example
 * devAccount(0).address // '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
 */
export function devAccount(index: number): DevAccount {
  // BIP-39 seed = PBKDF2-HMAC-SHA512(mnemonic, "mnemonic", 2048 rounds), once with node:crypto:
  // viem's mnemonicToAccount recomputes it in pure JS for every account, much slower.
  devMasterKey ??= HDKey.fromMasterSeed(
    pbkdf2Sync(DEV_MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'),
  )
  const key = devMasterKey.derive(`m/44'/60'/0'/0/${index}`).privateKey
  if (!key) throw new Error(`cannot derive dev account ${index}`)
  const privateKey = toHex(key)
  return { address: privateKeyToAccount(privateKey).address, privateKey }
}

/** A running anvil node. */
export interface Anvil {
  /** JSON-RPC endpoint, e.g. `http://127.0.0.1:41237`. */
  rpcUrl: string
  /** EVM chain id it answers with (`eth_chainId`, EIP-155 signatures, EIP-712 domains). */
  chainId: number
  /** Terminates the node and resolves once its process has exited. Idempotent. */
  stop(): Promise<void>
}

export interface StartAnvilOptions {
  /** TCP port; default: a free port picked by the OS (retried once if another process wins it). */
  port?: number
  /** Interface to bind; default `127.0.0.1`. */
  host?: string
  /** How long to wait for JSON-RPC to answer, in milliseconds; default 15 000. */
  readyTimeoutMs?: number
  /** Chain id to answer as; default {@link BASE_CHAIN_ID} (84532 poses as Base Sepolia). */
  chainId?: number
}

/**
 * Starts an anvil node (Foundry 1.x, from npm `@foundry-rs/anvil`) with chain id 8453 (or
 * `options.chainId`) and the
 * default dev mnemonic ("test test … junk", 10 accounts of 10 000 ETH, automine), and waits until
 * it reports listening and answers `eth_chainId`. Its console output is drained, never shown.
 *
 * The node is spawned behind a tiny `sh` watchdog that holds a pipe from this process: when this
 * process exits for any reason (even SIGKILL) the pipe closes and the watchdog kills anvil, so no
 * orphan node survives a test run or a Ctrl-C of `npm run dev`. POSIX only.
 *
 * @example
 * const anvil = await startAnvil()
 * // … use anvil.rpcUrl …
 * await anvil.stop()
 *
 * @throws Error if anvil exits early or does not answer within `readyTimeoutMs`
 */
export async function startAnvil(options: StartAnvilOptions = {}): Promise<Anvil> {
  const host = options.host ?? '127.0.0.1'
  const attempts = options.port === undefined ? 2 : 1
  let lastError: unknown
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = options.port ?? (await freePort(host))
    try {
      return await launch(host, port, options.readyTimeoutMs ?? 15_000, options.chainId)
    } catch (err) {
      lastError = err
    }
  }
  throw lastError
}

// `sh -c WATCHDOG anvil args…`: runs anvil in the background, prints its pid, hands its stdout
// to anvil alone (so the pipe closes when anvil exits), then blocks reading stdin; EOF (our
// stop() or our death) kills anvil. Traps are set after the spawn so that anvil does not inherit
// ignored signals.
const WATCHDOG =
  '"$0" "$@" </dev/null & pid=$!; echo "pid $pid"; exec >/dev/null; trap "" INT TERM HUP; ' +
  'while read -r _; do :; done; kill $pid 2>/dev/null; wait $pid'

async function launch(
  host: string,
  port: number,
  readyTimeoutMs: number,
  chainId = BASE_CHAIN_ID,
): Promise<Anvil> {
  const started = performance.now()
  const args = ['--chain-id', String(chainId), '--host', host, '--port', String(port)]
  const child = spawn('/bin/sh', ['-c', WATCHDOG, anvilBinary(), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  const exited = new Promise<false>((resolve) => {
    child.once('exit', () => resolve(false))
    child.once('error', (err) => {
      stderr += String(err)
      resolve(false)
    })
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000)
  })
  const { pid: anvilPid, listening, closed: stdoutClosed } = watchStdout(child)
  const rpcUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`

  let stopping: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null || !child.pid) return
      child.stdin?.end()
      const timedOut = await Promise.race([exited, sleep(5_000, true, { ref: false })])
      if (timedOut) {
        // The watchdog is wedged: kill anvil itself, then the watchdog.
        const pid = await anvilPid
        if (pid) killQuietly(pid)
        child.kill('SIGKILL')
        await exited
      }
    })()
    return stopping
  }

  // Wait for anvil's own "Listening on" line rather than polling the port: a poll would also be
  // answered by another node that already holds the port, while this one fails to bind.
  const ready = await Promise.race([
    listening,
    exited,
    sleep(readyTimeoutMs, false, { ref: false }),
  ])
  if (!ready || !(await answersChainId(rpcUrl, chainId))) {
    const early = stdoutClosed()
    await stop()
    const why = early ? 'exited early' : `did not answer within ${readyTimeoutMs} ms`
    throw new Error(`anvil on port ${port} ${why}${stderr ? `: ${stderr.trim()}` : ''}`)
  }
  logger.debug({ port, ms: Math.round(performance.now() - started) }, 'anvil ready')
  return { rpcUrl, chainId, stop }
}

/**
 * Reads the watchdog's `pid N` line and anvil's `Listening on host:port` line, then keeps draining
 * anvil's per-request log so the pipe never fills. The stream closes when anvil exits.
 */
function watchStdout(child: ChildProcess): {
  pid: Promise<number | undefined>
  /** true once anvil listens; false if it exits first. */
  listening: Promise<boolean>
  closed: () => boolean
} {
  let isClosed = false
  let onPid: (pid: number | undefined) => void = () => {}
  let onListening: (ok: boolean) => void = () => {}
  const pid = new Promise<number | undefined>((resolve) => {
    onPid = resolve
  })
  const listening = new Promise<boolean>((resolve) => {
    onListening = resolve
  })
  if (!child.stdout) {
    onPid(undefined)
    onListening(false)
    return { pid, listening, closed: () => true }
  }
  const lines = createInterface({ input: child.stdout })
  lines.on('line', (line) => {
    const pidMatch = /^pid (\d+)$/.exec(line)
    if (pidMatch?.[1]) onPid(Number(pidMatch[1]))
    else if (line.startsWith('Listening on ')) onListening(true)
  })
  lines.once('close', () => {
    isClosed = true
    onPid(undefined)
    onListening(false)
  })
  return { pid, listening, closed: () => isClosed }
}

/** Path of the native anvil binary from the platform package, skipping npm's Node wrapper. */
function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`
  return createRequire(import.meta.url).resolve(`${pkg}/bin/anvil`)
}

async function answersChainId(rpcUrl: string, chainId: number): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1_000),
    })
    const body = (await res.json()) as { result?: unknown }
    return body.result === `0x${chainId.toString(16)}`
  } catch {
    return false
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // Already gone.
  }
}
