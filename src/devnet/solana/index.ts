import type { Address } from '@solana/kit'
import { lamports } from '@solana/kit'
import type { Network } from '@x402/core/types'
import { FailedTransactionMetadata, LiteSVM } from 'litesvm'
import { devStage, type Stage } from '../stage.js'
import { createDevKeypair, type DevKeypair } from './keys.js'
import { startSolanaRpc } from './rpc-server.js'
import { createUsdcMint, mintUsdc, readUsdcBalance } from './usdc.js'

export type { DevKeypair } from './keys.js'
export { USDC_DECIMALS, USDC_MINT } from './usdc.js'

/** CAIP-2 identifier of Solana mainnet, the network the devnet poses as. */
export const SOLANA_MAINNET: Network = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

/** Lamports the fee payer starts with: 10 SOL, about 2,000 payments at 5,000 lamports each. */
const FEE_PAYER_LAMPORTS = 10_000_000_000n

/**
 * Landed transactions litesvm remembers (its default is 32). The history answers
 * `getSignatureStatuses` and refuses a transaction sent again; the devnet's blockhash never
 * expires, so it is the only guard against a replay, as Solana's status cache is for a
 * blockhash's lifetime. With 32, a settlement whose confirmation poll came after 32 newer ones
 * was never confirmed (the SDK's 30 s timeout, `settlement_pending`, although it had landed), and
 * an old transaction could have been sent and executed again. Each entry holds the
 * transaction's metadata and logs; 100,000 outlast any dev or test run.
 */
export const SIGNATURE_HISTORY = 100_000n

/** Options of {@link startSolanaDevnet}. */
export interface SolanaDevnetOptions {
  /** RPC port; 0 (default) picks a free one. */
  port?: number
  /** How many funded payers to create (default 3). */
  payers?: number
  /** Atomic USDC each payer starts with (default 100_000_000n, i.e. 100 USDC). */
  payerUsdc?: bigint
  /**
   * Label the deterministic account keys derive from (default `'default'`); the same seed always
   * gives the same fee payer, payTo and payer addresses.
   */
  seed?: string
  /** `testnet` poses as Solana devnet, with the devnet USDC mint; default `mainnet`. */
  stage?: Stage
}

/** A running local Solana network with USDC, see {@link startSolanaDevnet}. */
export interface SolanaDevnet {
  /** JSON-RPC endpoint over HTTP. */
  rpcUrl: string
  /** CAIP-2 network the devnet poses as: Solana mainnet (devnet on the testnet stage). */
  network: Network
  /** The USDC mint, at its mainnet (or devnet) address (6 decimals, SPL Token program). */
  usdcMint: Address
  /** The facilitator's fee payer, funded with 10 SOL. */
  feePayer: DevKeypair
  /** Receiving wallet; its USDC ATA exists with balance 0. */
  payTo: Address
  /** Paying wallets, each with a USDC ATA holding `payerUsdc` and no SOL (the fee payer pays fees). */
  payers: DevKeypair[]
  /** The underlying litesvm instance, for tests that need to bend the chain (expire blockhashes…). */
  svm: LiteSVM
  /** How many times each RPC method was called. */
  methodCalls(): Record<string, number>
  /**
   * Every transaction that landed through the RPC's `sendTransaction`, in order, with whether it
   * executed successfully: the ledger a test reconciles settlements against (setup mints do not
   * go through the RPC and are not listed).
   */
  landedTransactions(): { signature: string; ok: boolean }[]
  /** Atomic USDC in `owner`'s ATA (0n if it has none). */
  usdcBalance(owner: Address): Promise<bigint>
  /** Credits `amount` atomic USDC to `owner`'s ATA, creating the ATA if needed. */
  mint(owner: Address, amount: bigint): Promise<void>
  /**
   * Expires the current blockhash (litesvm `expireBlockhash`): transactions signed with it can
   * no longer land, and the RPC's `isBlockhashValid` says `false` for it.
   */
  expireBlockhash(): void
  /** Stops the RPC server. */
  stop(): Promise<void>
}

/**
 * Starts a local Solana network for dev and tests: litesvm (real SPL Token, Associated Token,
 * Memo and ComputeBudget programs) behind a JSON-RPC server, with the USDC mint at its mainnet
 * address (its devnet address with `stage: 'testnet'`), a funded fee payer, a payTo wallet and
 * funded payers. Accounts derive from `seed`, so
 * their keys are public: never use them on a real cluster.
 *
 * @example
 * const devnet = await startSolanaDevnet()
 * registerDevSvmScheme(facilitator, {
 *   rpcUrl: devnet.rpcUrl,
 *   feePayerSecretKey: devnet.feePayer.secretKey,
 *   network: devnet.network,
 * })
 * await devnet.usdcBalance(devnet.payTo) // 0n
 * await devnet.stop()
 */
export async function startSolanaDevnet(options: SolanaDevnetOptions = {}): Promise<SolanaDevnet> {
  const { port = 0, payers: payerCount = 3, payerUsdc = 100_000_000n, seed = 'default' } = options
  const { network, usdcMint } = devStage(options.stage).solana
  const svm = new LiteSVM().withTransactionHistory(SIGNATURE_HISTORY)

  const [feePayer, payTo, mintAuthority, ...payers] = await Promise.all([
    createDevKeypair(`${seed}/fee-payer`),
    createDevKeypair(`${seed}/pay-to`),
    createDevKeypair(`${seed}/usdc-mint-authority`),
    ...Array.from({ length: payerCount }, (_, i) => createDevKeypair(`${seed}/payer-${i}`)),
  ])
  if (feePayer === undefined || payTo === undefined || mintAuthority === undefined) {
    throw new Error('startSolanaDevnet: key derivation failed')
  }

  const airdrop = svm.airdrop(feePayer.address, lamports(FEE_PAYER_LAMPORTS))
  if (airdrop === null || airdrop instanceof FailedTransactionMetadata) {
    throw new Error('startSolanaDevnet: funding the fee payer failed')
  }
  createUsdcMint(svm, mintAuthority.address, usdcMint)
  await mintUsdc(svm, payTo.address, 0n, usdcMint)
  for (const payer of payers) await mintUsdc(svm, payer.address, payerUsdc, usdcMint)

  const server = await startSolanaRpc(svm, { port })
  return {
    rpcUrl: server.rpcUrl,
    network,
    usdcMint,
    feePayer,
    payTo: payTo.address,
    payers,
    svm,
    methodCalls: server.methodCalls,
    landedTransactions: () =>
      server.landedSignatures().map((signature) => ({
        signature,
        ok: !(svm.getTransaction(signature) instanceof FailedTransactionMetadata),
      })),
    usdcBalance: (owner) => readUsdcBalance(svm, owner, usdcMint),
    mint: (owner, amount) => mintUsdc(svm, owner, amount, usdcMint),
    expireBlockhash: () => svm.expireBlockhash(),
    stop: server.stop,
  }
}
