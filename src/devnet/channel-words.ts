import type { PaymentPayload, SettleResponse } from '@x402/core/types'
import { usdcDecimal } from '../tools/price.js'

/** The channel state a `batch-settlement` SettleResponse carries in `extra` (atomic units). */
interface ChannelExtra {
  chargedAmount?: string
  channelState?: { channelId?: string; balance?: string; chargedCumulativeAmount?: string }
}

/**
 * A channel id as people read it: its first 6 and last 4 hex digits.
 *
 * @example shortChannel('0x5a1c…e93b') // '0x5a1c…e93b'
 */
export function shortChannel(id: string): string {
  return id.length > 12 ? `${id.slice(0, 6)}…${id.slice(-4)}` : id
}

/** What a payment of the `batch-settlement` scheme was: `deposit`, `voucher` or `refund`. */
export function channelPaymentKind(payment: PaymentPayload): string | undefined {
  if (payment.accepted.scheme !== 'batch-settlement') return undefined
  const type = (payment.payload as { type?: unknown }).type
  return typeof type === 'string' ? type : undefined
}

/**
 * The line that says how a paid call was paid from a prepaid channel, from the SettleResponse's
 * channel state and the payment sent (its deposit amount); undefined for an `exact` payment.
 *
 * @example
 * channelLine(settled, payment)
 * // 'paid by voucher on eip155:8453: channel 0x5a1c…e93b, 0.002 USDC charged of its 1 USDC
 * //  deposit (no transaction: the service claims vouchers in batches)'
 */
export function channelLine(settled: SettleResponse, payment: PaymentPayload): string | undefined {
  const kind = channelPaymentKind(payment)
  if (kind === undefined) return undefined
  const extra = (settled.extra ?? {}) as ChannelExtra
  const state = extra.channelState ?? {}
  const channel = shortChannel(
    state.channelId ??
      (payment.payload as { voucher?: { channelId?: string } }).voucher?.channelId ??
      '?',
  )
  const charged = state.chargedCumulativeAmount
  const balance = state.balance
  const of =
    charged !== undefined && balance !== undefined
      ? `${usdcDecimal(charged)} USDC charged of its ${usdcDecimal(balance)} USDC deposit`
      : 'its state not reported'
  if (kind === 'deposit') {
    const amount = (payment.payload as { deposit?: { amount?: string } }).deposit?.amount ?? '0'
    return (
      `deposited ${usdcDecimal(amount)} USDC into channel ${channel} on ${settled.network} ` +
      `(transaction ${settled.transaction}), and paid this call from it: ${of}`
    )
  }
  return (
    `paid by voucher on ${settled.network}: channel ${channel}, ${of} (no transaction: the ` +
    'service claims vouchers in batches)'
  )
}
