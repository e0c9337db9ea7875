import type { FacilitatorClient } from '@x402/core/server'
import type {
  BatchSettlementChannelManager,
  BatchSettlementEvmScheme,
  Channel,
} from '@x402/evm/batch-settlement/server'
import { describeError, logger } from '../logger.js'
import type { Lease } from './lease.js'

/** What the channel manager reports (operator metrics), each when it happens. */
export interface ChannelManagerObserver {
  /** A claim, settle or refund transaction was sent: its outcome and how many vouchers it held. */
  job(job: 'claim' | 'settle' | 'refund', result: 'ok' | 'error', vouchers?: number): void
}

/** The channel manager as `/health` and the metrics read it, without I/O. */
export interface ChannelManagerStatus {
  /** `holder`: this instance claims, settles and refunds; `standby`: another one does. */
  role: 'holder' | 'standby'
  /** Open channels in the store, at the last survey. */
  channels: number
  /** Atomic USDC accepted by voucher and not yet claimed on chain, at the last survey. */
  unclaimed: string
  /** Seconds since the oldest voucher not yet claimed was first seen unclaimed; 0 when none. */
  oldestUnclaimedSeconds: number
  /** Epoch ms of the last claim, settle and refund transactions this instance sent. */
  lastClaimAt?: number
  lastSettleAt?: number
  lastRefundAt?: number
  /** Short reason of the last failed job, until one succeeds. */
  lastError?: string
}

/** Options of {@link createChannelManager}. Durations are seconds unless named otherwise. */
export interface ChannelManagerOptions {
  scheme: BatchSettlementEvmScheme
  /** The facilitators that send the claim, settle and refund transactions. */
  facilitator: FacilitatorClient
  /** CAIP-2 network of the channels, e.g. `eip155:8453`. */
  network: `${string}:${string}`
  /** The channels' token (USDC). */
  token: `0x${string}`
  lease: Lease
  /** BATCH_SETTLEMENT_CLAIM_INTERVAL_S. */
  claimIntervalSeconds: number
  /** BATCH_SETTLEMENT_SETTLE_INTERVAL_S. */
  settleIntervalSeconds: number
  /** BATCH_SETTLEMENT_IDLE_REFUND_S: a channel without a request this long is refunded. */
  idleRefundSeconds: number
  /** How often the store is surveyed (figures, withdrawals), in milliseconds; default 15 s. */
  surveyMs?: number
  /**
   * Which of these channels have a withdrawal started on chain (EVM_RPC_URL: the escrow's
   * `pendingWithdrawals`); absent: withdrawals are seen only when the payer calls again.
   */
  withdrawing?: (channelIds: string[]) => Promise<string[]>
  observer?: ChannelManagerObserver
  now?: () => number
}

/** The manager of every channel of one network: see {@link createChannelManager}. */
export interface ChannelManager {
  /** Starts asking for the lease; the holder runs the timers. */
  start(): void
  /**
   * Stops the timers and gives the lease back; with `flush`, the holder claims and settles first
   * (a graceful shutdown).
   */
  stop(options?: { flush?: boolean }): Promise<void>
  /** Claims every unclaimed voucher and settles now (tests, the dev demo, shutdown). */
  claimAndSettle(): Promise<{ claimed: number; settled: boolean }>
  /** Refunds these channels now (or every idle one): their payers get the unclaimed rest back. */
  refund(channelIds?: string[]): Promise<number>
  status(): ChannelManagerStatus
}

/**
 * The channel manager: the SDK's `BatchSettlementChannelManager` (claims vouchers in batches,
 * settles claimed funds to payTo, refunds idle channels) run by exactly one instance at a time,
 * the holder of the lease, with its work logged and observed. Every survey it reads the store for
 * the figures (accepted but unclaimed, oldest unclaimed) and claims at once the channels whose
 * payer started a withdrawal, well before the withdraw delay would let the payer take the
 * unclaimed rest back.
 *
 * @example
 * const manager = createChannelManager({ scheme, facilitator, network, token, lease, ... })
 * manager.start()
 */
export function createChannelManager(options: ChannelManagerOptions): ChannelManager {
  const now = options.now ?? Date.now
  const sdk: BatchSettlementChannelManager = options.scheme.createChannelManager(
    options.facilitator,
    options.network,
    options.token,
  )
  const storage = options.scheme.getStorage()
  const seenUnclaimed = new Map<string, number>()
  let current: ChannelManagerStatus = {
    role: 'standby',
    channels: 0,
    unclaimed: '0',
    oldestUnclaimedSeconds: 0,
  }
  let survey: NodeJS.Timeout | undefined
  let surveying: Promise<void> | undefined

  const failed = (job: 'claim' | 'settle' | 'refund', error: unknown) => {
    options.observer?.job(job, 'error')
    current = { ...current, lastError: describeError(error) }
    logger.warn({ job, err: describeError(error) }, 'channel manager: job failed')
  }
  const claimed = (vouchers: number, transaction: string) => {
    options.observer?.job('claim', 'ok', vouchers)
    current = { ...current, lastClaimAt: now() }
    delete current.lastError
    logger.info({ vouchers, transaction }, 'channel manager: vouchers claimed')
  }
  const settled = (transaction: string) => {
    options.observer?.job('settle', 'ok')
    current = { ...current, lastSettleAt: now() }
    delete current.lastError
    logger.info({ transaction }, 'channel manager: claimed funds settled to payTo')
  }
  const refunded = (transaction: string) => {
    options.observer?.job('refund', 'ok')
    current = { ...current, lastRefundAt: now() }
    delete current.lastError
    logger.info({ transaction }, 'channel manager: idle channel refunded')
  }

  /** Reads the store: figures for /health and the metrics, and withdrawals to claim at once. */
  async function surveyStore(): Promise<void> {
    let channels: Channel[]
    try {
      channels = await storage.list()
    } catch (error) {
      logger.warn({ err: describeError(error) }, 'channel manager: store not readable')
      return
    }
    const at = now()
    let unclaimed = 0n
    let oldest = at
    const open = new Set<string>()
    for (const channel of channels) {
      const owed = BigInt(channel.chargedCumulativeAmount) - BigInt(channel.totalClaimed)
      if (owed <= 0n) continue
      open.add(channel.channelId)
      unclaimed += owed
      const since = seenUnclaimed.get(channel.channelId) ?? at
      seenUnclaimed.set(channel.channelId, since)
      oldest = Math.min(oldest, since)
    }
    for (const id of seenUnclaimed.keys()) if (!open.has(id)) seenUnclaimed.delete(id)
    current = {
      ...current,
      channels: channels.length,
      unclaimed: unclaimed.toString(),
      oldestUnclaimedSeconds: Math.floor((at - oldest) / 1000),
    }
    if (!options.lease.held() || !options.withdrawing || open.size === 0) return
    const withdrawing = await options.withdrawing([...open]).catch((error: unknown) => {
      logger.warn({ err: describeError(error) }, 'channel manager: withdrawals not read')
      return []
    })
    if (withdrawing.length === 0) return
    logger.info({ channels: withdrawing.length }, 'channel manager: withdrawal started; claiming')
    const ids = new Set(withdrawing.map((id) => id.toLowerCase()))
    await runClaimAndSettle((list) => list.filter((c) => ids.has(c.channelId.toLowerCase())))
  }

  async function runClaimAndSettle(
    select?: (channels: Channel[]) => Channel[],
  ): Promise<{ claimed: number; settled: boolean }> {
    let count = 0
    try {
      const results = await sdk.claim(select ? { selectClaimChannels: select } : {})
      for (const result of results) {
        count += result.vouchers
        claimed(result.vouchers, result.transaction)
      }
    } catch (error) {
      failed('claim', error)
      return { claimed: count, settled: false }
    }
    if (count === 0) return { claimed: 0, settled: false }
    try {
      settled((await sdk.settle()).transaction)
      return { claimed: count, settled: true }
    } catch (error) {
      failed('settle', error)
      return { claimed: count, settled: false }
    }
  }

  function startSurveys(): void {
    clearInterval(survey)
    survey = setInterval(() => {
      surveying ??= surveyStore().finally(() => {
        surveying = undefined
      })
    }, options.surveyMs ?? 15_000)
    survey.unref()
  }

  return {
    start() {
      startSurveys()
      options.lease.start({
        onGain: () => {
          current = { ...current, role: 'holder' }
          sdk.start({
            claimIntervalSecs: options.claimIntervalSeconds,
            settleIntervalSecs: options.settleIntervalSeconds,
            // Refunds are looked for as often as claims; each one is for a channel idle that long.
            refundIntervalSecs: options.claimIntervalSeconds,
            selectRefundChannels: (channels) =>
              channels.filter(
                (c) =>
                  BigInt(c.balance) > BigInt(c.chargedCumulativeAmount) &&
                  now() - c.lastRequestTimestamp >= options.idleRefundSeconds * 1000 &&
                  !(c.pendingRequest && c.pendingRequest.expiresAt > now()),
              ),
            onClaim: (r) => claimed(r.vouchers, r.transaction),
            onSettle: (r) => settled(r.transaction),
            onRefund: (r) => refunded(r.transaction),
            onError: (error) => failed('claim', error),
          })
        },
        onLose: () => {
          current = { ...current, role: 'standby' }
          void sdk.stop()
        },
      })
    },
    async stop(stopOptions) {
      clearInterval(survey)
      await surveying
      const holder = options.lease.held()
      await sdk.stop()
      if (holder && stopOptions?.flush) await runClaimAndSettle()
      await options.lease.stop()
      current = { ...current, role: 'standby' }
    },
    async claimAndSettle() {
      const done = await runClaimAndSettle()
      await surveyStore()
      return done
    },
    async refund(channelIds) {
      try {
        const results = channelIds
          ? await sdk.refund(channelIds)
          : await sdk.refundIdleChannels({ idleSecs: options.idleRefundSeconds })
        for (const r of results) refunded(r.transaction)
        await surveyStore()
        return results.length
      } catch (error) {
        failed('refund', error)
        return 0
      }
    },
    status: () => ({ ...current }),
  }
}
