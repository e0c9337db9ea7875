import { type SpendControlAsset, x402Client } from '@x402/core/client'
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types'
import type { Hex } from 'viem'
import { ConfigError } from './config.js'
import { isUsdc, RAIL_LABEL, RAIL_NETWORK, type RailId, railOf } from './rails.js'
import { parseAtomic } from './usdc.js'

/** The only x402 scheme the bridge pays with. */
export const SCHEME = 'exact'

/** The 402 offers nothing this wallet can pay: no `exact` USDC offer on a rail it holds a key for. */
export class NoPayableRailError extends Error {
  override readonly name = 'NoPayableRailError'
}

/** One offer of a 402, described for a message: "Base (eip155:8453)", "eip155:1 (not USDC)"… */
function describe(offer: PaymentRequirements): string {
  const rail = railOf(offer.network)
  const where = rail ? `${RAIL_LABEL[rail]} (${offer.network})` : offer.network
  if (offer.scheme !== SCHEME) return `${where}, scheme ${offer.scheme}`
  if (rail && !isUsdc(rail, offer.asset)) return `${where}, not USDC`
  return where
}

/**
 * Picks the offer to pay from a 402's `accepts`: scheme `exact`, a rail this wallet holds a key
 * for, the USDC of that rail, an integer atomic amount. The preferred rail wins when offered;
 * otherwise the service's order decides.
 *
 * @example
 * chooseOffer(required.accepts, ['base', 'solana'], 'solana').network // 'solana:5eykt4…'
 * @param walletRails - the rails this wallet can sign on
 * @param preferred - `PAYER_RAIL`, if set
 * @throws {NoPayableRailError} naming what was offered and what the wallet holds
 */
export function chooseOffer(
  accepts: readonly PaymentRequirements[],
  walletRails: readonly RailId[],
  preferred?: RailId,
): PaymentRequirements {
  const payable = accepts.filter((offer) => {
    const rail = railOf(offer.network)
    return (
      offer.scheme === SCHEME &&
      rail !== undefined &&
      walletRails.includes(rail) &&
      isUsdc(rail, offer.asset) &&
      parseAtomic(offer.amount) !== undefined
    )
  })
  const chosen = payable.find((offer) => railOf(offer.network) === preferred) ?? payable[0]
  if (chosen) return chosen
  const offered = accepts.length ? accepts.map(describe).join('; ') : 'nothing'
  const held = walletRails.map((r) => RAIL_LABEL[r]).join(' and ')
  const missing = (['base', 'solana'] as const).filter((r) => !walletRails.includes(r))
  const hint = missing.length
    ? ` To pay on ${missing.map((r) => RAIL_LABEL[r]).join(' or ')}, set ${missing
        .map((r) => (r === 'base' ? 'PAYER_PRIVATE_KEY' : 'PAYER_SOLANA_SECRET_KEY'))
        .join(' or ')}.`
    : ''
  throw new NoPayableRailError(
    `The service offers ${offered}; this wallet pays USDC with scheme exact on ${held} only.` +
      `${hint} Nothing was signed.`,
  )
}

/** The keys and settings a wallet is made from (see `BridgeConfig`). */
export interface WalletKeys {
  evmPrivateKey?: Hex
  solanaSecretKey?: Uint8Array
  solanaRpcUrl: string
  /** `MAX_USDC_PER_CALL` in atomic units, given to the SDK's own spend controls as well. */
  perCallCap: bigint
}

/** Signs x402 payments with the user's keys; knows nothing of caps beyond the per-call one. */
export interface Wallet {
  /** The rails this wallet holds a key for. */
  readonly rails: readonly RailId[]
  /**
   * Signs `offer` (one of `required.accepts`) with the official x402 client: an EIP-3009
   * authorization on Base, a partially signed TransferChecked on Solana (which reads the mint and
   * a recent blockhash from the Solana RPC).
   *
   * @throws {Error} from the SDK when it cannot sign (e.g. the Solana RPC is unreachable)
   */
  sign(required: PaymentRequired, offer: PaymentRequirements): Promise<PaymentPayload>
}

/**
 * A wallet over the official `x402Client` with the `exact` EVM and/or SVM client schemes, one per
 * rail whose key is set.
 *
 * The client's own spend controls repeat two of our rules as a second lock: only the USDC of each
 * rail is allowed, at most `perCallCap` atomic units per payment.
 *
 * @example
 * const wallet = await createWallet({ evmPrivateKey: '0x…', solanaRpcUrl, perCallCap: 10_000n })
 * const payload = await wallet.sign(required, chooseOffer(required.accepts, wallet.rails))
 */
export async function createWallet(keys: WalletKeys): Promise<Wallet> {
  const client = new x402Client()
  const rails: RailId[] = []
  const allowedAssets: SpendControlAsset[] = []
  const cap = keys.perCallCap.toString()
  // Each rail's scheme is loaded only when its key is set: viem and @solana/kit are most of the
  // bridge's start-up time.
  if (keys.evmPrivateKey) {
    const [{ ExactEvmScheme }, { privateKeyToAccount }] = await Promise.all([
      import('@x402/evm/exact/client'),
      import('viem/accounts'),
    ])
    client.register(RAIL_NETWORK.base, new ExactEvmScheme(privateKeyToAccount(keys.evmPrivateKey)))
    rails.push('base')
    allowedAssets.push({ network: RAIL_NETWORK.base, asset: 'USDC', maxAmountPerPayment: cap })
  }
  if (keys.solanaSecretKey) {
    const [{ ExactSvmScheme }, { createKeyPairSignerFromBytes }] = await Promise.all([
      import('@x402/svm/exact/client'),
      import('@solana/kit'),
    ])
    const signer = await createKeyPairSignerFromBytes(keys.solanaSecretKey).catch(() => {
      // Not the library's message: it must not carry anything of the key into a log.
      throw new ConfigError(
        'PAYER_SOLANA_SECRET_KEY',
        'not an Ed25519 key pair: the last 32 bytes must be the public key of the first 32',
      )
    })
    client.register(RAIL_NETWORK.solana, new ExactSvmScheme(signer, { rpcUrl: keys.solanaRpcUrl }))
    rails.push('solana')
    allowedAssets.push({ network: RAIL_NETWORK.solana, asset: 'USDC', maxAmountPerPayment: cap })
  }
  // "USDC" matches by the SDK's default-asset symbol, so the cap applies to USDC on each rail;
  // maxAmountPerPayment: false removes the SDK's $1 default for every other asset, which the
  // bridge never pays anyway (chooseOffer keeps USDC only).
  client.setSpendControls({ maxAmountPerPayment: false, allowedAssets })
  return {
    rails,
    sign: (required, offer) => client.createPaymentPayload({ ...required, accepts: [offer] }),
  }
}
