import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FacilitatorClient } from '@x402/core/server'
import { BATCH_SETTLEMENT_SCHEME } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/server'
import type { Redis } from 'ioredis'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { BatchSettlementConfig } from '../config.js'
import type { ExtraScheme, Rail } from '../facilitators/link.js'
import { logger } from '../logger.js'
import { type EscrowCheck, escrowReader } from './escrow.js'
import { createLease } from './lease.js'
import {
  type ChannelManager,
  type ChannelManagerObserver,
  type ChannelManagerStatus,
  createChannelManager,
} from './manager.js'
import { CHANNEL_KEY_PREFIX, channelStorage } from './storage.js'

export type { ChannelManagerStatus } from './manager.js'
export { BATCH_SETTLEMENT_SCHEME }

/** The channels as `/health` shows them. */
export interface ChannelsStatus {
  /** Whether `batch-settlement` is in the 402s now. */
  offered: boolean
  /** Why it is not, when it is not (configuration, the escrow check). */
  reason?: string
  /** Where the channels' state lives. */
  storage: 'redis' | 'file'
  manager: ChannelManagerStatus
}

/** The prepaid channels of the Base rail (x402 `batch-settlement`), see {@link createChannels}. */
export interface Channels {
  /** The SDK's server scheme: local voucher verification and charging, through the gate. */
  scheme: BatchSettlementEvmScheme
  /** What the facilitator link offers beside `exact` on Base. */
  offer: ExtraScheme
  manager: ChannelManager
  /** Runs the escrow check (with EVM_RPC_URL), then starts the manager. */
  start(): Promise<void>
  /** Stops the manager; with `flush` the holder claims and settles first. */
  stop(options?: { flush?: boolean }): Promise<void>
  status(): ChannelsStatus
}

/** Options of {@link createChannels}. */
export interface ChannelsOptions {
  config: BatchSettlementConfig
  /** The Base rail (its network, USDC and payTo, the receiver of every channel). */
  rail: Rail
  /** The facilitators that send deposits, claims, settlements and refunds. */
  facilitator: FacilitatorClient
  /** EVM_RPC_URL: the escrow is checked on it before the scheme is offered. */
  rpcUrl: string | undefined
  /** The instance's Redis (REDIS_URL): shared channel state and the manager's lease. */
  redis?: Redis | undefined
  /** Where the dev receiver-authorizer key and the file channel store live (`./data`). */
  dataDir: string
  observer?: ChannelManagerObserver
  /** Time between surveys of the store, in milliseconds (tests); default 15 s. */
  surveyMs?: number
  /**
   * Prefix of the channel records and of the manager's lease in Redis (instances sharing a
   * channel share it; tests sharing one Redis keep theirs apart); default {@link CHANNEL_KEY_PREFIX}.
   */
  keyPrefix?: string
  /** How often a standby asks for the lease, in milliseconds; default 5 s (`LEASE_POLL_MS`). */
  leasePollMs?: number
}

/** How often a failed escrow check is made again, in milliseconds. */
export const RECHECK_MS = 15_000

/** File under the data directory that keeps the generated dev receiver-authorizer key. */
export const AUTHORIZER_KEY_FILE = 'batch-settlement-authorizer-key'

/**
 * The prepaid channels: `batch-settlement` offered beside `exact` on Base once its escrow is
 * proven on the chain (EVM_RPC_URL: code at the SDK's fixed addresses and the specification's
 * channel id), its state in Redis or on disk, and a leased manager that claims, settles and
 * refunds. Without EVM_RPC_URL, or when the check fails, it is not offered, and the log and
 * `/health` say why.
 *
 * @example
 * const channels = createChannels({ config: config.batchSettlement, rail, facilitator, rpcUrl, dataDir: './data' })
 * await channels.start()
 */
export function createChannels(options: ChannelsOptions): Channels {
  const { config, rail } = options
  const key = config.receiverAuthorizerKey ?? devAuthorizerKey(options.dataDir)
  const keyPrefix = options.keyPrefix ?? CHANNEL_KEY_PREFIX
  const scheme = new BatchSettlementEvmScheme(rail.payTo as `0x${string}`, {
    storage: channelStorage({
      ...(options.redis ? { redis: options.redis } : {}),
      dataDir: options.dataDir,
      keyPrefix,
    }),
    receiverAuthorizerSigner: privateKeyToAccount(key),
    withdrawDelay: config.withdrawDelaySeconds,
    enforceMinDeposit: true,
  })
  const reader = options.rpcUrl ? escrowReader(options.rpcUrl, rail.network) : undefined
  let check: EscrowCheck = reader
    ? { ok: false, reason: 'the escrow check has not finished yet' }
    : { ok: false, reason: 'EVM_RPC_URL is not set: the escrow cannot be checked' }
  const manager = createChannelManager({
    scheme,
    facilitator: options.facilitator,
    network: rail.network,
    token: rail.asset as `0x${string}`,
    lease: createLease(options.redis, {
      key: `${keyPrefix}:manager`,
      ...(options.leasePollMs ? { pollMs: options.leasePollMs } : {}),
    }),
    claimIntervalSeconds: config.claimIntervalSeconds,
    settleIntervalSeconds: config.settleIntervalSeconds,
    idleRefundSeconds: config.idleRefundSeconds,
    ...(reader ? { withdrawing: (ids: string[]) => reader.withdrawing(ids) } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.surveyMs ? { surveyMs: options.surveyMs } : {}),
  })
  let recheck: NodeJS.Timeout | undefined
  let stopped = false
  /**
   * The escrow check, and again every {@link RECHECK_MS} until it passes: an RPC that did not
   * answer at start (or an escrow deployed later) must not keep the scheme off for good.
   */
  async function runCheck(): Promise<void> {
    if (!reader || stopped) return
    const before = check
    check = await reader.check()
    if (check.ok) {
      logger.info(
        { network: rail.network, min_deposit: config.minDeposit },
        'batch-settlement offered beside exact',
      )
      return
    }
    if (before.ok || !('reason' in before) || before.reason !== check.reason) {
      logger.warn({ reason: check.reason }, 'batch-settlement not offered; checking again')
    }
    recheck = setTimeout(() => void runCheck(), RECHECK_MS)
    recheck.unref()
  }
  return {
    scheme,
    offer: {
      rail: rail.id,
      scheme,
      extra: { minDeposit: config.minDeposit },
      offered: () => check.ok,
    },
    manager,
    async start() {
      if (!reader) {
        logger.warn(
          { reason: 'EVM_RPC_URL is not set: the escrow cannot be checked' },
          'batch-settlement not offered',
        )
      }
      await runCheck()
      // Channels opened before a restart are claimed and refunded whatever the check says now.
      manager.start()
    },
    async stop(stopOptions) {
      stopped = true
      clearTimeout(recheck)
      await manager.stop(stopOptions)
    },
    status: () => ({
      offered: check.ok,
      ...(check.ok ? {} : { reason: check.reason }),
      storage: options.redis ? 'redis' : 'file',
      manager: manager.status(),
    }),
  }
}

/**
 * The dev receiver-authorizer key, generated once into `<dataDir>/batch-settlement-authorizer-key`
 * (mode 0600) and reused: production sets BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY, the same on
 * every instance, since channels opened with one authorizer are claimed with its signatures.
 */
function devAuthorizerKey(dataDir: string): `0x${string}` {
  const path = join(dataDir, AUTHORIZER_KEY_FILE)
  mkdirSync(dataDir, { recursive: true })
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`
  writeFileSync(temporary, generatePrivateKey(), { mode: 0o600 })
  try {
    // link() fails when the file exists: of two processes starting together one key wins.
    linkSync(temporary, path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temporary)
  }
  const stored = readFileSync(path, 'utf8').trim()
  if (!/^0x[0-9a-fA-F]{64}$/.test(stored)) {
    throw new Error(
      `${path} is not a 0x-prefixed 32-byte hex key; delete it or set BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY`,
    )
  }
  logger.warn(
    { file: path },
    'BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY is not set: channels use a generated dev key (file); production must set it and share it across instances',
  )
  return stored as `0x${string}`
}
