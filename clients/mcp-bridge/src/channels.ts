import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import type { x402Client } from '@x402/core/client'
import type {
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  SettleResponse,
} from '@x402/core/types'
import type {
  BatchSettlementClientContext,
  BatchSettlementEvmScheme,
  ClientChannelStorage,
} from '@x402/evm/batch-settlement/client'
import type { Hex } from 'viem'
import { BASE_NETWORK, isUsdc } from './rails.js'
import { formatUsdc, parseAtomic } from './usdc.js'

// Protocol constants of the `batch-settlement` scheme, written here as rails.ts writes its own:
// the SDK does not export its error reasons, and its modules load only for a wallet that uses them.

/** The x402 scheme of prepaid channels (a deposit into an escrow, then cumulative vouchers). */
export const CHANNEL_SCHEME = 'batch-settlement'
/** The SDK's reason when a voucher's cumulative amount is not the channel's: resync and sign again. */
export const CUMULATIVE_MISMATCH = 'invalid_batch_settlement_evm_cumulative_amount_mismatch'
/** The SDK's reason when the channel is serving another call of this payer: sign again shortly. */
export const CHANNEL_BUSY = 'invalid_batch_settlement_evm_channel_busy'
/** The deposit the SDK signs when an offer announces no `minDeposit`: this many times the price. */
const SDK_DEPOSIT_MULTIPLIER = 5n
/** Base's public JSON-RPC, the default of `BASE_RPC_URL`. */
export const BASE_MAINNET_RPC_URL = 'https://mainnet.base.org'
/** The file, in the channels directory, naming the channel this user pays each service from. */
export const OPEN_CHANNELS_FILE = 'open.json'

/** A deposit the SDK was about to sign above `MAX_USDC_DEPOSIT`: nothing was signed. */
export class DepositCapError extends Error {
  override readonly name = 'DepositCapError'
}

/** The channel a wallet pays a service from, as its local record has it (atomic USDC). */
export interface OpenChannel {
  network: string
  /** The channel id (bytes32, lower-case hex). */
  id: string
  /** What was deposited into the escrow for it and not refunded. */
  balance: bigint
  /** What the service charged from it so far (the cumulative amount of the last voucher). */
  charged: bigint
}

/** A channel offer of a 402, chosen: the offer and the deposit a new channel would need. */
export type ChannelChoice =
  | { offer: PaymentRequirements; deposit: bigint }
  | { offer?: undefined; reason: string }

/**
 * A channel id as people read it: its first 6 and last 4 hex digits.
 *
 * @example shortChannel('0x5a1c0f…93be93b') // '0x5a1c…e93b'
 */
export function shortChannel(id: string): string {
  return id.length > 12 ? `${id.slice(0, 6)}…${id.slice(-4)}` : id
}

/** What the bridge needs of prepaid channels (x402 `batch-settlement` on Base). */
export interface ChannelWallet {
  /** `MAX_USDC_DEPOSIT`, atomic units. */
  readonly depositCap: bigint
  /**
   * The `batch-settlement` USDC offer on Base of a 402's `accepts`, when one can be paid within
   * `MAX_USDC_DEPOSIT` (else why not); `undefined` when none is offered.
   */
  choose(accepts: readonly PaymentRequirements[]): ChannelChoice | undefined
  /**
   * Runs paid calls on the channel one at a time: the service refuses a second voucher while the
   * first is in flight (`channel_busy`), and each voucher's amount follows the previous answer.
   */
  exclusive<T>(run: () => Promise<T>): Promise<T>
  /**
   * Signs with the official client scheme: a deposit (EIP-3009 authorization of the deposit)
   * with the first voucher when the channel has no deposit, or not enough, else a voucher.
   *
   * @throws {DepositCapError} a deposit above `MAX_USDC_DEPOSIT`
   * @throws {Error} from the SDK (e.g. the Base RPC cannot be read)
   */
  sign(required: PaymentRequired, offer: PaymentRequirements): Promise<PaymentPayload>
  /** Keeps the local record in step with a settled answer (its `extra` channel state). */
  settled(payment: PaymentPayload, settlement: SettleResponse): Promise<OpenChannel | undefined>
  /**
   * What to do after the service refused a channel payment: `resync` (the corrective
   * PaymentRequired carried the channel's state and the record follows it), `busy` (another
   * call holds the channel), or `undefined` (a refusal signing again would not cure).
   */
  refused(
    payment: PaymentPayload,
    required: PaymentRequired,
  ): Promise<'resync' | 'busy' | undefined>
  /** The channel this user last paid the service from, from the local record only (no network). */
  open(): Promise<OpenChannel | undefined>
  /**
   * The official client's refund of that channel through `url` (a paid HTTP route of the
   * service: GET, then GET with a refund voucher): the service claims what it charged and the
   * escrow returns the rest.
   *
   * @returns the refund's SettleResponse, and what the record said was left (atomic USDC)
   * @throws {Error} from the SDK (nothing to refund, the service refused)
   */
  refund(url: string): Promise<{ settlement: SettleResponse; channel?: OpenChannel }>
}

/** The options of {@link createChannelWallet}. */
export interface ChannelOptions {
  evmPrivateKey: Hex
  /** `BASE_RPC_URL`: the client reads a channel's deposit from the escrow there. */
  rpcUrl: string
  /** Where the channel records are kept: `<state dir>/channels`. */
  directory: string
  /** The service paid, whose channel `open.json` names. */
  serviceUrl: string
  /** `MAX_USDC_DEPOSIT` in atomic units (above 0). */
  depositCap: bigint
  /** `MAX_USDC_PER_CALL` in atomic units: the price of one call, a second lock here. */
  perCallCap: bigint
  /** Reads the escrow (tests); by default a viem public client on `rpcUrl`. */
  reader?: { readContract(args: unknown): Promise<unknown> }
}

/**
 * Channel records checked against the escrow once per process: a record whose deposit is not the
 * escrow's (the service refunded the channel while it was idle; a devnet was reset) would make the
 * client sign vouchers the service refuses. Such a record is dropped and the SDK rebuilds it from
 * the chain and from the service's corrective 402.
 */
export class ChainCheckedStorage implements ClientChannelStorage {
  private readonly checked = new Set<string>()

  /** @param deposited - the escrow's `balance` of a channel, atomic units */
  constructor(
    private readonly inner: ClientChannelStorage,
    private readonly deposited: (channelId: Hex) => Promise<bigint>,
  ) {}

  async get(key: string): Promise<BatchSettlementClientContext | undefined> {
    const record = await this.inner.get(key)
    if (record === undefined || this.checked.has(key)) return record
    const onChain = await this.deposited(key as Hex)
    this.checked.add(key)
    if (record.balance !== undefined && BigInt(record.balance) === onChain) return record
    await this.inner.delete(key)
    return undefined
  }

  async set(key: string, context: BatchSettlementClientContext): Promise<void> {
    this.checked.add(key)
    await this.inner.set(key, context)
  }

  async delete(key: string): Promise<void> {
    await this.inner.delete(key)
  }

  /** Checks the record against the escrow again on its next read (the service refused it). */
  recheck(key: string): void {
    this.checked.delete(key.toLowerCase())
  }
}

/** The channel id a channel payment (deposit, voucher or refund) names. */
function channelIdOf(payment: PaymentPayload): string | undefined {
  const id = (payment.payload as { voucher?: { channelId?: unknown } }).voucher?.channelId
  return typeof id === 'string' ? id.toLowerCase() : undefined
}

/**
 * `open.json`: per service URL, the channel this user pays it from, so that the spend tool names
 * it in a later session too. Written like the day file: a temporary file, then a rename.
 */
class OpenChannels {
  private readonly path: string
  constructor(directory: string) {
    this.path = join(directory, OPEN_CHANNELS_FILE)
  }

  read(): Record<string, { network: string; channel: string }> {
    try {
      const value = JSON.parse(readFileSync(this.path, 'utf8')) as { channels?: unknown }
      return typeof value.channels === 'object' && value.channels !== null
        ? (value.channels as Record<string, { network: string; channel: string }>)
        : {}
    } catch {
      return {}
    }
  }

  write(serviceUrl: string, network: string, channel: string): void {
    const channels = this.read()
    const known = channels[serviceUrl]
    if (known?.channel === channel && known.network === network) return
    channels[serviceUrl] = { network, channel }
    const temp = `${this.path}.${process.pid}.${Date.now()}.tmp`
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 })
      const fd = openSync(temp, 'w', 0o600)
      try {
        writeSync(fd, `${JSON.stringify({ version: 1, channels })}\n`)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(temp, this.path)
    } catch {
      // Only the spend tool reads it, and this process remembers the channel anyway.
      try {
        unlinkSync(temp)
      } catch {
        // Nothing to clean up.
      }
    }
  }
}

/**
 * Prepaid channels for the bridge's Base key, over the official client scheme
 * (`BatchSettlementEvmScheme` of `@x402/evm/batch-settlement/client`, its records in the SDK's
 * `FileClientChannelStorage` under `options.directory`, checked against the escrow once per
 * process), within `MAX_USDC_DEPOSIT`: a deposit the SDK would sign above it is refused before
 * signing. The SDK and viem's public client are loaded on first use: a service that offers no
 * channel costs the bridge nothing at start.
 *
 * @example
 * const channels = createChannelWallet({ evmPrivateKey, rpcUrl, directory, serviceUrl,
 *   depositCap: 1_000_000n, perCallCap: 10_000n })
 * const choice = channels.choose(required.accepts) // { offer, deposit: 1000000n }
 */
export function createChannelWallet(options: ChannelOptions): ChannelWallet {
  const cap = options.depositCap
  const index = new OpenChannels(options.directory)
  let current: { network: string; id: string } | undefined
  let queue: Promise<unknown> = Promise.resolve()
  let loaded: ReturnType<typeof load> | undefined
  const sdk = () => {
    loaded ??= load(options)
    return loaded
  }

  const remember = (payment: PaymentPayload) => {
    const id = channelIdOf(payment)
    if (!id) return
    current = { network: payment.accepted.network, id }
    index.write(options.serviceUrl, current.network, id)
  }

  async function open(): Promise<OpenChannel | undefined> {
    const known = current ?? fromIndex()
    if (!known) return undefined
    const { records } = await sdk()
    const record = await records.get(known.id).catch(() => undefined)
    const balance = parseAtomic(record?.balance)
    if (!record || balance === undefined) return undefined
    return { ...known, balance, charged: parseAtomic(record.chargedCumulativeAmount) ?? 0n }
  }

  function fromIndex(): { network: string; id: string } | undefined {
    const entry = index.read()[options.serviceUrl]
    return typeof entry?.channel === 'string' && typeof entry.network === 'string'
      ? { network: entry.network, id: entry.channel.toLowerCase() }
      : undefined
  }

  return {
    depositCap: cap,
    choose(accepts) {
      const offer = accepts.find(
        (o) =>
          o.scheme === CHANNEL_SCHEME &&
          o.network === BASE_NETWORK &&
          isUsdc('base', o.asset) &&
          parseAtomic(o.amount) !== undefined,
      )
      if (!offer) return undefined
      if (typeof offer.extra?.receiverAuthorizer !== 'string') {
        return { reason: 'its channel offer names no receiverAuthorizer' }
      }
      const price = BigInt(offer.amount)
      const announced = parseAtomic(offer.extra?.minDeposit)
      const deposit =
        announced !== undefined && announced >= price ? announced : SDK_DEPOSIT_MULTIPLIER * price
      if (deposit > cap) {
        return {
          reason:
            `a channel needs a deposit of ${formatUsdc(deposit)} USDC (the service's ` +
            `minDeposit), above MAX_USDC_DEPOSIT (${formatUsdc(cap)} USDC)`,
        }
      }
      return { offer, deposit }
    },
    exclusive(run) {
      const next = queue.then(run, run)
      queue = next.catch(() => undefined)
      return next
    },
    async sign(required, offer) {
      if (BigInt(offer.amount) > options.perCallCap) {
        throw new Error(`the price is above MAX_USDC_PER_CALL (${formatUsdc(options.perCallCap)})`)
      }
      const { client } = await sdk()
      const payment = await client.createPaymentPayload({ ...required, accepts: [offer] })
      remember(payment)
      return payment
    },
    async settled(payment, settlement) {
      const { client } = await sdk()
      await client.handlePaymentResponse({
        paymentPayload: payment,
        requirements: payment.accepted,
        settleResponse: settlement,
      })
      return open()
    },
    async refused(payment, required) {
      if (required.error === CHANNEL_BUSY) return 'busy'
      const { client, storage } = await sdk()
      const done = await client.handlePaymentResponse({
        paymentPayload: payment,
        requirements: payment.accepted,
        paymentRequired: required,
      })
      if (done?.recovered) return 'resync'
      // A refusal the record cannot explain (the deposit was refunded while this process ran):
      // the next call reads the escrow again before it signs.
      const id = channelIdOf(payment)
      if (id) storage.recheck(id)
      return undefined
    },
    open,
    async refund(url) {
      const channel = await open()
      const { scheme } = await sdk()
      const settlement = await scheme.refund(url)
      return { settlement, ...(channel ? { channel } : {}) }
    },
  }
}

/** The SDK's client scheme and x402 client of {@link createChannelWallet}, loaded once. */
async function load(options: ChannelOptions): Promise<{
  scheme: BatchSettlementEvmScheme
  client: x402Client
  records: ClientChannelStorage
  storage: ChainCheckedStorage
}> {
  const [
    { x402Client: Client },
    { toClientEvmSigner },
    { BatchSettlementEvmScheme: Scheme, readChannelBalanceAndTotalClaimed },
    { FileClientChannelStorage },
    { createPublicClient, http },
    { privateKeyToAccount },
  ] = await Promise.all([
    import('@x402/core/client'),
    import('@x402/evm'),
    import('@x402/evm/batch-settlement/client'),
    import('@x402/evm/batch-settlement/client/file-storage'),
    import('viem'),
    import('viem/accounts'),
  ])
  const reader = options.reader ?? createPublicClient({ transport: http(options.rpcUrl) })
  const signer = toClientEvmSigner(
    privateKeyToAccount(options.evmPrivateKey),
    reader as Parameters<typeof toClientEvmSigner>[1],
  )
  const records = new FileClientChannelStorage({ directory: options.directory })
  const storage = new ChainCheckedStorage(records, async (id) => {
    const [balance] = await readChannelBalanceAndTotalClaimed(signer, id)
    return balance
  })
  const cap = options.depositCap
  const scheme = new Scheme(signer, {
    storage,
    depositStrategy: ({ depositAmount }) => {
      if (BigInt(depositAmount) > cap) {
        throw new DepositCapError(
          `the channel needs a deposit of ${formatUsdc(BigInt(depositAmount))} USDC, above ` +
            `MAX_USDC_DEPOSIT (${formatUsdc(cap)} USDC)`,
        )
      }
      return undefined
    },
  })
  const client = new Client().register(BASE_NETWORK, scheme)
  // The deposit is bounded by the strategy above; the SDK's own bound (5 × a per-payment cap)
  // would shrink it below the service's minDeposit, which the service refuses.
  client.setSpendControls({
    maxAmountPerPayment: false,
    allowedAssets: [{ network: BASE_NETWORK, asset: 'USDC' }],
  })
  return { scheme, client, records, storage }
}
