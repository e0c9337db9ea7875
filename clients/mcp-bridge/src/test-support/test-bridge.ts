import { type BridgeParts, createBridge, type RemoteService } from '../bridge.js'
import type { Caps } from '../config.js'
import { SpendLedger } from '../ledger.js'
import type { RailId } from '../rails.js'
import { createReceiptChecker } from '../receipts.js'
import { createWallet, type Wallet } from '../wallet.js'
import { RECEIPT_KEYS } from './fake-remote.js'
import { TEST_EVM_KEY } from './offers.js'

/** Options of {@link testBridge}. */
export interface TestBridgeOptions {
  remote: RemoteService
  /** Caps in atomic USDC; default 10,000 per call and 100,000 per session. */
  caps?: Partial<Caps>
  preferredRail?: RailId | undefined
  /** Parts to replace (e.g. `maxRetryAfterSeconds`). */
  over?: Partial<BridgeParts>
  log: (line: string) => void
  /** Called before each signature the wallet makes. */
  onSign?: () => void
}

/**
 * A bridge on `remote` with a real x402 wallet (EVM signing is offline; the Solana RPC and the
 * receipt keys' URL are unreachable), a fresh ledger and the fake service's receipt keys.
 *
 * @example const { bridge } = await testBridge({ remote: fakeRemote(tools), log: console.log })
 */
export async function testBridge(options: TestBridgeOptions) {
  const full: Caps = { perCall: 10_000n, perSession: 100_000n, ...options.caps }
  const real = await createWallet({
    evmPrivateKey: TEST_EVM_KEY,
    solanaRpcUrl: 'http://127.0.0.1:1',
    perCallCap: full.perCall,
  })
  const wallet: Wallet = {
    rails: real.rails,
    sign: (required, offer) => {
      options.onSign?.()
      return real.sign(required, offer)
    },
  }
  const ledger = new SpendLedger(full, undefined)
  const bridge = createBridge({
    remote: options.remote,
    wallet,
    ledger,
    log: options.log,
    receipts: createReceiptChecker({ serviceUrl: 'http://127.0.0.1:1', keys: RECEIPT_KEYS }),
    ...(options.preferredRail ? { preferredRail: options.preferredRail } : {}),
    ...options.over,
  })
  return { bridge, ledger }
}
