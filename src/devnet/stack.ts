import { x402Facilitator } from '@x402/core/facilitator'
import { type EvmDevnet, startEvmDevnet } from './evm.js'
import { registerDevEvmScheme } from './evm-facilitator.js'
import {
  type FacilitatorRequestCounts,
  type FacilitatorServer,
  startFacilitatorServer,
} from './facilitator-server.js'
import { freePort } from './ports.js'
import { registerDevSvmScheme } from './solana/facilitator-scheme.js'
import { type SolanaDevnet, startSolanaDevnet } from './solana/index.js'
import type { Stage } from './stage.js'

/**
 * Everything a paid call needs, offline: a local Base chain (anvil, chain id 8453, USDC at the real
 * address), a local Solana VM (litesvm behind a JSON-RPC server, USDC at the real mint), and the
 * official `@x402/core` facilitator with the EVM and SVM `exact` schemes, served over HTTP. On the
 * testnet stage the chains pose as Base Sepolia (chain id 84532, USDC named "USDC" at its Sepolia
 * address) and Solana devnet (the devnet USDC mint).
 */
export interface DevStack {
  /** Which networks the chains pose as. */
  stage: Stage
  evm: EvmDevnet
  solana: SolanaDevnet
  /** Base URL of the facilitator (`/verify`, `/settle`, `/supported`). */
  facilitatorUrl: string
  /** Requests the facilitator received since the stack started, by endpoint (live counters). */
  facilitatorRequests: Readonly<FacilitatorRequestCounts>
  /**
   * The service's environment for this stack: FACILITATOR_URL, both payTo addresses, the Solana
   * network and X402_NETWORK (the USDC addresses and EIP-712 domain are the stage's defaults, as
   * on the real networks).
   */
  serviceEnv: Record<string, string>
  /** Stops the facilitator server (tests of the fail-closed path); the chains keep running. */
  stopFacilitator(): Promise<void>
  /** Starts the facilitator again on the same URL. */
  startFacilitator(): Promise<void>
  stop(): Promise<void>
}

/** Options of {@link startDevStack}. */
export interface DevStackOptions {
  /** Payers per chain, each funded with 100 USDC (default 3). */
  payers?: number
  /** Facilitator port; a free one by default. */
  facilitatorPort?: number
  /** `testnet`: pose as Base Sepolia and Solana devnet; default `mainnet`. */
  stage?: Stage
}

/**
 * Starts the whole local stack. Dev and tests only.
 *
 * @example
 * const stack = await startDevStack()
 * const config = loadConfig({ ...stack.serviceEnv, PORT: '0' })
 * // … pay with stack.evm.payers[0].privateKey or stack.solana.payers[0].secretKey
 * await stack.stop()
 */
export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const payers = options.payers ?? 3
  const stage = options.stage ?? 'mainnet'
  const [evm, solana] = await Promise.all([
    startEvmDevnet({ payers, stage }),
    startSolanaDevnet({ payers, stage }),
  ])
  const facilitator = new x402Facilitator()
  registerDevEvmScheme(facilitator, {
    rpcUrl: evm.rpcUrl,
    privateKey: evm.facilitatorPrivateKey,
    stage,
  })
  registerDevSvmScheme(facilitator, {
    rpcUrl: solana.rpcUrl,
    feePayerSecretKey: solana.feePayer.secretKey,
    network: solana.network,
  })
  const port = options.facilitatorPort ?? (await freePort())
  const counts: FacilitatorRequestCounts = { supported: 0, verify: 0, settle: 0 }
  let server: FacilitatorServer | undefined = await startFacilitatorServer(facilitator, {
    port,
    counts,
  })
  const facilitatorUrl = server.url

  return {
    stage,
    evm,
    solana,
    facilitatorUrl,
    facilitatorRequests: counts,
    serviceEnv: {
      FACILITATOR_URL: facilitatorUrl,
      PAY_TO_EVM: evm.payTo,
      PAY_TO_SOLANA: solana.payTo,
      SOLANA_NETWORK: solana.network,
      X402_NETWORK: stage,
    },
    async stopFacilitator() {
      await server?.stop()
      server = undefined
    },
    async startFacilitator() {
      server ??= await startFacilitatorServer(facilitator, { port, counts })
    },
    async stop() {
      await server?.stop()
      server = undefined
      await Promise.all([evm.stop(), solana.stop()])
    },
  }
}
