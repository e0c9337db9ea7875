import type { PaymentRequirements, SettleResponse } from '@x402/core/types'
import { describeError, logger } from '../logger.js'
import type { Receipts } from '../receipts/index.js'
import type { JsonResult } from '../runner/json-result.js'

/** What a delivery receipt states about one paid answer, besides the settlement. */
export interface DeliveredCall {
  /** The tool id. */
  tool: string
  /** `resource.url` of the call's PaymentRequired. */
  resource: string
  /** The offered requirements (the settled rail's asset and payTo come from them). */
  requirements: readonly PaymentRequirements[]
  /** Lower-case hex SHA-256 of the RFC 8785 form of the checked input (made on a worker). */
  inputDigest: string
  /** The result, with the SHA-256 of its RFC 8785 form (made by the worker that ran the tool). */
  result: JsonResult
  /** The tools' clock the result was computed with, in Unix seconds: the receipt's `iat`. */
  nowSeconds: number
  /** The offered requirements the payment matched, when known (its scheme's asset and payTo). */
  matched?: PaymentRequirements
  /** A voucher call: the channel charged and the voucher's cumulative amount (atomic USDC). */
  voucher?: { channel: string; cumulative: string }
}

/**
 * The receipt step of the gate (src/receipts): the SettleResponse of a paid 200 with its signed
 * delivery receipt in `extensions["delivery-receipt"]` (and, when it names its payer, the official
 * `offer-receipt` receipt). Both digests were computed on worker threads. A receipt that cannot be
 * signed (a bug) is logged and the paid result still released: it has been paid for.
 *
 * The rail's facts come from the settlement's own network: a replay may have been re-signed on
 * another rail than the one that settled.
 *
 * @example const settlement = await withReceipt(receipts, settled, { tool: 'hash', … })
 */
export async function withReceipt(
  receipts: Receipts | undefined,
  settlement: SettleResponse,
  call: DeliveredCall,
): Promise<SettleResponse> {
  if (!receipts) return settlement
  // The payment's own rail and scheme, unless the settlement was on another rail (a replay).
  const rail =
    call.matched?.network === settlement.network
      ? call.matched
      : call.requirements.find((r) => r.network === settlement.network)
  try {
    if (!rail) throw new Error(`no offered rail for the settled network ${settlement.network}`)
    return await receipts.deliver(settlement, {
      iat: call.nowSeconds,
      resource: call.resource,
      tool: call.tool,
      input_sha256: call.inputDigest,
      result_sha256: call.result.digest,
      network: settlement.network,
      asset: rail.asset,
      // What the call was charged: a voucher's SettleResponse has no amount, and a deposit's is
      // the whole deposit, of which the call is charged the price.
      amount: (call.voucher ? undefined : settlement.amount) || rail.amount,
      pay_to: rail.payTo,
      ...(settlement.transaction ? { transaction: settlement.transaction } : {}),
      ...(call.voucher
        ? { channel: call.voucher.channel.toLowerCase(), cumulative: call.voucher.cumulative }
        : {}),
    })
  } catch (error) {
    logger.error({ tool: call.tool, err: describeError(error) }, 'receipt not signed')
    return settlement
  }
}
