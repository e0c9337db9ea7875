import { homedir } from 'node:os'
import { join } from 'node:path'
import { toClientEvmSigner } from '@x402/evm'
import {
  type BatchSettlementClientContext,
  BatchSettlementEvmScheme,
  type ClientChannelStorage,
  InMemoryClientChannelStorage,
  readChannelBalanceAndTotalClaimed,
} from '@x402/evm/batch-settlement/client'
import { FileClientChannelStorage } from '@x402/evm/batch-settlement/client/file-storage'
import { createPublicClient, type Hex, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/**
 * Where `npm run pay` keeps its channel records between runs (`PAYER_CHANNELS_DIR` overrides it):
 * in the payer's home, not in a checkout, as a record belongs to the payer's key and the service's
 * channel, whichever directory the command runs from. One JSON file per channel,
 * `<dir>/client/<channel id>.json`, written by the SDK's `FileClientChannelStorage`.
 */
export const DEFAULT_CHANNELS_DIR = join(homedir(), '.payload-tools', 'channels')

/** How a payer pays `batch-settlement` offers (x402 prepaid channels on an EVM chain). */
export interface ChannelPayerOptions {
  /** JSON-RPC URL of the chain the escrow is on: the client reads a channel's deposit there. */
  rpcUrl: string
  /** Directory of the channel records (kept across runs); absent: in memory, this process only. */
  directory?: string | undefined
}

/**
 * Channel records checked against the chain once per process: a record whose deposit is not the
 * escrow's (the chain was reset, as a devnet is on every `npm run dev`; or the service refunded an
 * idle channel) would make the client sign vouchers the service refuses. Such a record is dropped,
 * and the SDK rebuilds it from the chain (`recoverChannel`) and from the service's corrective 402.
 */
export class ChainCheckedStorage implements ClientChannelStorage {
  private readonly checked = new Set<string>()

  /**
   * @param inner - where the records live
   * @param deposited - the escrow's `balance` of a channel (atomic units): what was deposited and
   *   not refunded or withdrawn, claims included
   */
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
}

/**
 * The official `batch-settlement` client scheme (`BatchSettlementEvmScheme` of
 * `@x402/evm/batch-settlement/client`) for an EVM key: the first payment on a channel deposits
 * (the offer's `extra.minDeposit`, an EIP-3009 authorization the facilitator settles), the next
 * ones are vouchers on the cumulative amount, checked by the service without the facilitator.
 * Its signer reads the chain (`toClientEvmSigner` with a viem public client), for the channel's
 * deposit when no record is kept, for the corrective 402's proof, and for refunds
 * (`scheme.refund(url)`: a GET on a paid route).
 *
 * @example
 * const scheme = channelScheme(key, { rpcUrl: 'http://127.0.0.1:8545', directory: DEFAULT_CHANNELS_DIR })
 * const client = await payerClient({ evmPrivateKey: key }, 'evm', scheme)
 * // … pay; then get the unclaimed rest back:
 * await scheme.refund('http://127.0.0.1:8402/hash')
 */
export function channelScheme(
  privateKey: Hex,
  options: ChannelPayerOptions,
): BatchSettlementEvmScheme {
  const reader = createPublicClient({ transport: http(options.rpcUrl) })
  const signer = toClientEvmSigner(privateKeyToAccount(privateKey), reader)
  const records = options.directory
    ? new FileClientChannelStorage({ directory: options.directory })
    : new InMemoryClientChannelStorage()
  const storage = new ChainCheckedStorage(records, async (channelId) => {
    const [balance] = await readChannelBalanceAndTotalClaimed(signer, channelId)
    return balance
  })
  return new BatchSettlementEvmScheme(signer, { storage })
}
