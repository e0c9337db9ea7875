import { join } from 'node:path'
import { type Bridge, createBridge } from './bridge.js'
import { type ChannelWallet, createChannelWallet } from './channels.js'
import type { BridgeConfig } from './config.js'
import { DayFile } from './day-file.js'
import { SpendLedger } from './ledger.js'
import type { Log } from './log.js'
import { RAIL_LABEL } from './rails.js'
import { createReceiptChecker } from './receipts.js'
import { connectRemote } from './remote.js'
import { formatUsdc } from './usdc.js'
import { VERSION } from './version.js'
import { createWallet, type Wallet } from './wallet.js'

/** A bridge wired to the service, the wallet and the caps of a config. */
export interface Assembled {
  bridge: Bridge
  wallet: Wallet
  ledger: SpendLedger
  /** Closes the connection to the service. */
  close(): Promise<void>
}

/**
 * Builds the bridge of a config: the remote MCP client, the wallet, and the ledger with the
 * day file in the state directory.
 */
export async function assemble(config: BridgeConfig, log: Log): Promise<Assembled> {
  const remote = connectRemote({ mcpUrl: config.mcpUrl, version: VERSION })
  const wallet = await createWallet({
    ...(config.evmPrivateKey ? { evmPrivateKey: config.evmPrivateKey } : {}),
    ...(config.solanaSecretKey ? { solanaSecretKey: config.solanaSecretKey } : {}),
    solanaRpcUrl: config.solanaRpcUrl,
    perCallCap: config.caps.perCall,
  })
  const ledger = new SpendLedger(config.caps, new DayFile(config.stateDir), log)
  const channels = channelsOf(config)
  const bridge = createBridge({
    remote,
    wallet,
    ledger,
    log,
    receipts: createReceiptChecker({ serviceUrl: config.serviceUrl }),
    ...(config.preferredRail ? { preferredRail: config.preferredRail } : {}),
    ...(channels ? { channels, serviceUrl: config.serviceUrl } : {}),
  })
  return { bridge, wallet, ledger, close: () => remote.close() }
}

/**
 * The prepaid channels of a config: for a Base key, unless `MAX_USDC_DEPOSIT` is 0; their
 * records under `<state dir>/channels` (the SDK's files, and `open.json`).
 */
export function channelsOf(config: BridgeConfig): ChannelWallet | undefined {
  if (!config.evmPrivateKey || config.depositCap === 0n) return undefined
  return createChannelWallet({
    evmPrivateKey: config.evmPrivateKey,
    rpcUrl: config.baseRpcUrl,
    directory: join(config.stateDir, 'channels'),
    serviceUrl: config.serviceUrl,
    depositCap: config.depositCap,
    perCallCap: config.caps.perCall,
  })
}

/** One line that sums up a config for the log: service, rails, caps. Never a key. */
export function describeConfig(config: BridgeConfig, wallet: Wallet): string {
  const rails = wallet.rails
    .map((r) => (r === config.preferredRail ? `${RAIL_LABEL[r]} (preferred)` : RAIL_LABEL[r]))
    .join(', ')
  const { perCall, perSession, perDay } = config.caps
  return (
    `service ${config.serviceUrl}; wallet on ${rails}; caps ${formatUsdc(perCall)} USDC per ` +
    `call, ${formatUsdc(perSession)} per session, ` +
    `${perDay === undefined ? 'no daily cap' : `${formatUsdc(perDay)} per day`}` +
    (config.evmPrivateKey
      ? config.depositCap === 0n
        ? '; prepaid channels off (MAX_USDC_DEPOSIT=0)'
        : `; prepaid channels on Base, deposits of at most ${formatUsdc(config.depositCap)} USDC`
      : '')
  )
}
