import { type Address, lamports } from '@solana/kit'
import { x402Facilitator } from '@x402/core/facilitator'
import { FailedTransactionMetadata } from 'litesvm'
import { type EvmDevnet, startEvmDevnet } from './evm.js'
import { registerDevEvmScheme } from './evm-facilitator.js'
import type { DevFacilitatorAuth } from './facilitator-auth.js'
import {
  type FacilitatorFaults,
  type FacilitatorReceived,
  type FacilitatorRequestCounts,
  type FacilitatorServer,
  startFacilitatorServer,
} from './facilitator-server.js'
import { freePort } from './ports.js'
import { registerDevSvmScheme } from './solana/facilitator-scheme.js'
import { type DevKeypair, type SolanaDevnet, startSolanaDevnet } from './solana/index.js'
import { createDevKeypair } from './solana/keys.js'
import type { Stage } from './stage.js'

/** One facilitator of the dev stack, served over HTTP. */
export interface DevFacilitator {
  /** Base URL (with its base path, if any), as FACILITATOR_URL lists it. */
  url: string
  /** Its auth mode, `none` when it takes any request. */
  auth: 'none' | DevFacilitatorAuth['mode']
  /** Requests it received since the stack started, by endpoint (live counters). */
  requests: Readonly<FacilitatorRequestCounts>
  /** Every verify and settle it answered, in order. */
  received: readonly FacilitatorReceived[]
  /** Faults a test may switch on and off (delays, failures, lost answers). */
  faults: FacilitatorFaults
  /** Its Solana fee payer (`extra.feePayer` of its `/supported`): each facilitator has its own. */
  feePayer: Address
  /** Stops its server: requests to it are refused. The chains keep running. */
  stop(): Promise<void>
  /** Starts it again on the same URL. */
  start(): Promise<void>
}

/** Options of one facilitator of {@link startDevStack}. */
export interface DevFacilitatorOptions {
  /** Requires a CDP (or PayAI) API-key JWT on every request, checked as that facilitator does. */
  auth?: DevFacilitatorAuth
  /** Serves the API under this path (e.g. `/platform/v2/x402`, as CDP). */
  basePath?: string
  /** Port; a free one by default. */
  port?: number
}

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
  /** The facilitators, in order of preference (one unless `facilitators` asked for more). */
  facilitators: DevFacilitator[]
  /** Base URL of the first facilitator (`/verify`, `/settle`, `/supported`). */
  facilitatorUrl: string
  /** Requests the first facilitator received since the stack started (live counters). */
  facilitatorRequests: Readonly<FacilitatorRequestCounts>
  /**
   * The service's environment for this stack: FACILITATOR_URL (every facilitator, in order),
   * FACILITATOR_AUTH when one has auth (the keys are the caller's), both payTo addresses, the
   * Solana network and X402_NETWORK (the USDC addresses and EIP-712 domain are the stage's
   * defaults, as on the real networks).
   */
  serviceEnv: Record<string, string>
  /** Stops the first facilitator's server (tests of the fail-closed path). */
  stopFacilitator(): Promise<void>
  /** Starts the first facilitator again on the same URL. */
  startFacilitator(): Promise<void>
  stop(): Promise<void>
}

/** Options of {@link startDevStack}. */
export interface DevStackOptions {
  /** Payers per chain, each funded with 100 USDC (default 3). */
  payers?: number
  /** The first facilitator's port; a free one by default. */
  facilitatorPort?: number
  /**
   * The facilitators to serve, in order of preference (default: one, without auth). Each has its
   * own Solana fee payer (funded with 10 SOL); they share the EVM account that pays gas.
   */
  facilitators?: DevFacilitatorOptions[]
  /** `testnet`: pose as Base Sepolia and Solana devnet; default `mainnet`. */
  stage?: Stage
}

/** Lamports each extra facilitator's fee payer starts with: 10 SOL. */
const FEE_PAYER_LAMPORTS = 10_000_000_000n

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
  const specs = options.facilitators ?? [{}]
  const facilitators: DevFacilitator[] = []
  try {
    for (const [i, spec] of specs.entries()) {
      const feePayer = i === 0 ? solana.feePayer : await extraFeePayer(solana, i)
      facilitators.push(
        await startDevFacilitator(evm, solana, feePayer, stage, {
          ...spec,
          ...(i === 0 && options.facilitatorPort ? { port: options.facilitatorPort } : {}),
        }),
      )
    }
  } catch (error) {
    await Promise.all([...facilitators.map((f) => f.stop()), evm.stop(), solana.stop()])
    throw error
  }
  const first = facilitators[0] as DevFacilitator
  const withAuth = facilitators.some((f) => f.auth !== 'none')

  return {
    stage,
    evm,
    solana,
    facilitators,
    facilitatorUrl: first.url,
    facilitatorRequests: first.requests,
    serviceEnv: {
      FACILITATOR_URL: facilitators.map((f) => f.url).join(','),
      ...(withAuth ? { FACILITATOR_AUTH: facilitators.map((f) => f.auth).join(',') } : {}),
      PAY_TO_EVM: evm.payTo,
      PAY_TO_SOLANA: solana.payTo,
      SOLANA_NETWORK: solana.network,
      X402_NETWORK: stage,
      // Every surface of the service says that these networks are simulated here.
      X402_DEVNET: 'on',
    },
    stopFacilitator: () => first.stop(),
    startFacilitator: () => first.start(),
    async stop() {
      await Promise.all(facilitators.map((f) => f.stop()))
      await Promise.all([evm.stop(), solana.stop()])
    },
  }
}

/** A second (third…) facilitator's own Solana fee payer, funded on the local chain. */
async function extraFeePayer(solana: SolanaDevnet, index: number): Promise<DevKeypair> {
  const keypair = await createDevKeypair(`facilitator-${index}/fee-payer`)
  const airdrop = solana.svm.airdrop(keypair.address, lamports(FEE_PAYER_LAMPORTS))
  if (airdrop === null || airdrop instanceof FailedTransactionMetadata) {
    throw new Error(`startDevStack: funding facilitator ${index}'s fee payer failed`)
  }
  return keypair
}

/** The official facilitator with both `exact` schemes, served over HTTP with its counters. */
async function startDevFacilitator(
  evm: EvmDevnet,
  solana: SolanaDevnet,
  feePayer: DevKeypair,
  stage: Stage,
  spec: DevFacilitatorOptions,
): Promise<DevFacilitator> {
  const facilitator = new x402Facilitator()
  registerDevEvmScheme(facilitator, {
    rpcUrl: evm.rpcUrl,
    privateKey: evm.facilitatorPrivateKey,
    stage,
  })
  registerDevSvmScheme(facilitator, {
    rpcUrl: solana.rpcUrl,
    feePayerSecretKey: feePayer.secretKey,
    network: solana.network,
  })
  const port = spec.port ?? (await freePort())
  const counts: FacilitatorRequestCounts = { supported: 0, verify: 0, settle: 0 }
  const received: FacilitatorReceived[] = []
  const faults: FacilitatorFaults = {}
  const serverOptions = {
    port,
    counts,
    received,
    faults,
    ...(spec.auth ? { auth: spec.auth } : {}),
    ...(spec.basePath ? { basePath: spec.basePath } : {}),
  }
  let server: FacilitatorServer | undefined = await startFacilitatorServer(
    facilitator,
    serverOptions,
  )
  return {
    url: server.url,
    auth: spec.auth?.mode ?? 'none',
    requests: counts,
    received,
    faults,
    feePayer: feePayer.address,
    async stop() {
      await server?.stop()
      server = undefined
    },
    async start() {
      server ??= await startFacilitatorServer(facilitator, serverOptions)
    },
  }
}
