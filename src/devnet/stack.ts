import { type Address, lamports } from '@solana/kit'
import { x402Facilitator } from '@x402/core/facilitator'
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
// Types only: litesvm (the Solana VM) loads its native binary when imported, so the Solana devnet
// is imported when the Solana rail starts, and an EVM-only stack runs where that binary is absent.
import type { DevKeypair, SolanaDevnet } from './solana/index.js'
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
  /**
   * Its Solana fee payer (`extra.feePayer` of its `/supported`): each facilitator has its own.
   * `undefined` on a stack without the Solana rail.
   */
  feePayer: Address | undefined
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

/** A rail of the dev stack: `evm` (anvil as Base) or `solana` (litesvm). */
export type DevRail = 'evm' | 'solana'

/**
 * Everything a paid call needs, offline: a local Base chain (anvil, chain id 8453, USDC at the real
 * address), a local Solana VM (litesvm behind a JSON-RPC server, USDC at the real mint), and the
 * official `@x402/core` facilitator with the EVM and SVM `exact` schemes, served over HTTP. On the
 * testnet stage the chains pose as Base Sepolia (chain id 84532, USDC named "USDC" at its Sepolia
 * address) and Solana devnet (the devnet USDC mint).
 *
 * Started with `rails: ['evm']`, it has no Solana VM (`solana` is `undefined`), its facilitators
 * register the EVM scheme only and {@link DevStack.serviceEnv} has no Solana payTo, so the
 * service offers Base alone.
 *
 * @typeParam R - the rails started
 */
export interface DevStack<R extends DevRail = DevRail> {
  /** Which networks the chains pose as. */
  stage: Stage
  /** The rails started, EVM first. */
  rails: readonly R[]
  evm: EvmDevnet
  /** The Solana VM, `undefined` on a stack started without the Solana rail. */
  solana: 'solana' extends R ? SolanaDevnet : undefined
  /** The facilitators, in order of preference (one unless `facilitators` asked for more). */
  facilitators: DevFacilitator[]
  /** Base URL of the first facilitator (`/verify`, `/settle`, `/supported`). */
  facilitatorUrl: string
  /** Requests the first facilitator received since the stack started (live counters). */
  facilitatorRequests: Readonly<FacilitatorRequestCounts>
  /**
   * The service's environment for this stack: FACILITATOR_URL (every facilitator, in order),
   * FACILITATOR_AUTH when one has auth (the keys are the caller's), the payTo address of each rail
   * started, the Solana network (with the Solana rail) and X402_NETWORK (the USDC addresses and EIP-712 domain are the stage's
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
export interface DevStackOptions<R extends DevRail = DevRail> {
  /**
   * The rails to start (default both). `['evm']` starts no Solana VM, so it runs where litesvm's
   * native binary cannot load; the EVM rail is always started.
   */
  rails?: readonly R[]
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
 * Starts the whole local stack (or its EVM rail alone, with `rails: ['evm']`). Dev and tests only.
 *
 * @example
 * const stack = await startDevStack()
 * const config = loadConfig({ ...stack.serviceEnv, PORT: '0' })
 * // … pay with stack.evm.payers[0].privateKey or stack.solana.payers[0].secretKey
 * await stack.stop()
 * @example
 * const base = await startDevStack({ rails: ['evm'] }) // base.solana: undefined
 */
export async function startDevStack<R extends DevRail = DevRail>(
  options: DevStackOptions<R> = {},
): Promise<DevStack<R>> {
  const payers = options.payers ?? 3
  const stage = options.stage ?? 'mainnet'
  const requested: readonly DevRail[] = options.rails ?? ['evm', 'solana']
  if (!requested.includes('evm')) {
    throw new Error("startDevStack: the EVM rail is always started (rails: ['evm'] or both)")
  }
  const withSolana = requested.includes('solana')
  const [evm, solana] = await Promise.all([
    startEvmDevnet({ payers, stage }),
    withSolana
      ? import('./solana/index.js').then((m) => m.startSolanaDevnet({ payers, stage }))
      : undefined,
  ])
  const specs = options.facilitators ?? [{}]
  const facilitators: DevFacilitator[] = []
  try {
    for (const [i, spec] of specs.entries()) {
      const feePayer =
        solana === undefined
          ? undefined
          : i === 0
            ? solana.feePayer
            : await extraFeePayer(solana, i)
      facilitators.push(
        await startDevFacilitator(evm, solana, feePayer, stage, {
          ...spec,
          ...(i === 0 && options.facilitatorPort ? { port: options.facilitatorPort } : {}),
        }),
      )
    }
  } catch (error) {
    await Promise.all([...facilitators.map((f) => f.stop()), evm.stop(), solana?.stop()])
    throw error
  }
  const first = facilitators[0] as DevFacilitator
  const withAuth = facilitators.some((f) => f.auth !== 'none')

  return {
    stage,
    rails: (withSolana ? ['evm', 'solana'] : ['evm']) as R[],
    evm,
    solana: solana as DevStack<R>['solana'],
    facilitators,
    facilitatorUrl: first.url,
    facilitatorRequests: first.requests,
    serviceEnv: {
      FACILITATOR_URL: facilitators.map((f) => f.url).join(','),
      ...(withAuth ? { FACILITATOR_AUTH: facilitators.map((f) => f.auth).join(',') } : {}),
      PAY_TO_EVM: evm.payTo,
      // Without the Solana rail no Solana payTo: the service leaves that rail out of every 402.
      ...(solana ? { PAY_TO_SOLANA: solana.payTo, SOLANA_NETWORK: solana.network } : {}),
      X402_NETWORK: stage,
      // Every surface of the service says that these networks are simulated here.
      X402_DEVNET: 'on',
    },
    stopFacilitator: () => first.stop(),
    startFacilitator: () => first.start(),
    async stop() {
      await Promise.all(facilitators.map((f) => f.stop()))
      await Promise.all([evm.stop(), solana?.stop()])
    },
  }
}

/** A second (third…) facilitator's own Solana fee payer, funded on the local chain. */
async function extraFeePayer(solana: SolanaDevnet, index: number): Promise<DevKeypair> {
  const { FailedTransactionMetadata } = await import('litesvm')
  const keypair = await createDevKeypair(`facilitator-${index}/fee-payer`)
  const airdrop = solana.svm.airdrop(keypair.address, lamports(FEE_PAYER_LAMPORTS))
  if (airdrop === null || airdrop instanceof FailedTransactionMetadata) {
    throw new Error(`startDevStack: funding facilitator ${index}'s fee payer failed`)
  }
  return keypair
}

/**
 * The official facilitator with the `exact` scheme of each rail started (EVM always, SVM with a
 * Solana VM), served over HTTP with its counters.
 */
async function startDevFacilitator(
  evm: EvmDevnet,
  solana: SolanaDevnet | undefined,
  feePayer: DevKeypair | undefined,
  stage: Stage,
  spec: DevFacilitatorOptions,
): Promise<DevFacilitator> {
  const facilitator = new x402Facilitator()
  registerDevEvmScheme(facilitator, {
    rpcUrl: evm.rpcUrl,
    privateKey: evm.facilitatorPrivateKey,
    stage,
  })
  if (solana && feePayer) {
    registerDevSvmScheme(facilitator, {
      rpcUrl: solana.rpcUrl,
      feePayerSecretKey: feePayer.secretKey,
      network: solana.network,
    })
  }
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
    feePayer: feePayer?.address,
    async stop() {
      await server?.stop()
      server = undefined
    },
    async start() {
      server ??= await startFacilitatorServer(facilitator, serverOptions)
    },
  }
}
