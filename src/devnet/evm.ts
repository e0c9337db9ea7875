import type { Network } from '@x402/core/types'
import { type Address, createTestClient, type Hash, type Hex, http } from 'viem'
import { type DevAccount, devAccount, startAnvil } from './anvil.js'
import { installBatchSettlement } from './batch-settlement.js'
import { installMulticall3 } from './multicall3.js'
import { devStage, type Stage } from './stage.js'
import {
  cancelUsdcAuthorization,
  executeUsdcTransfers,
  installUsdc,
  mintUsdc,
  type SignedUsdcTransfer,
  signUsdcTransfer,
  usdcBalance,
} from './usdc.js'

/**
 * A local chain that answers as Base mainnet (or Base Sepolia on the testnet stage), with USDC
 * and Multicall3 at their addresses there.
 */
export interface EvmDevnet {
  /** anvil JSON-RPC endpoint. */
  rpcUrl: string
  /** 8453, or 84532 on the testnet stage. */
  chainId: number
  /** CAIP-2 network id for PaymentRequirements: `eip155:8453` or `eip155:84532`. */
  network: Network
  /**
   * USDC token (FiatTokenV2_2, 6 decimals, EIP-712 version "2"; named "USD Coin" at Base's
   * address, "USDC" at Base Sepolia's).
   */
  usdcAddress: Address
  /** The token's EIP-712 domain name and version (PaymentRequirements `extra`). */
  usdcDomain: { name: string; version: string }
  /** Key of dev account 0, which holds 10 000 ETH for settlement gas. */
  facilitatorPrivateKey: Hex
  facilitatorAddress: Address
  /** Dev account 1: a payTo that starts with 0 USDC. */
  payTo: Address
  /** Dev accounts 2, 3, …: payers, each minted `payerBalance` USDC. They hold ETH but need none. */
  payers: DevAccount[]
  /** USDC balance of `address`, in atomic units. */
  usdcBalance(address: Address): Promise<bigint>
  /** Mints `amount` atomic units of USDC to `address`. */
  mint(address: Address, amount: bigint): Promise<void>
  /**
   * Cancels `payer`'s unused EIP-3009 authorization `nonce` on the devnet USDC, signed and sent by
   * the payer (`AuthorizationCanceled`); resolves with the transaction hash, rejects if it reverts.
   */
  cancelAuthorization(payer: DevAccount, nonce: Hex): Promise<Hash>
  /**
   * Signs an EIP-3009 transfer of the devnet USDC with `payer`'s key, for any recipient, amount
   * and nonce the payer chooses ({@link signUsdcTransfer}).
   */
  signTransfer(
    payer: DevAccount,
    transfer: Parameters<typeof signUsdcTransfer>[1],
  ): Promise<SignedUsdcTransfer>
  /**
   * Executes signed transfers in one Multicall3 `aggregate3` transaction sent by `sender`
   * ({@link executeUsdcTransfers}); resolves with its hash once mined.
   */
  executeTransfers(sender: DevAccount, transfers: readonly SignedUsdcTransfer[]): Promise<Hash>
  /**
   * Turns anvil's automine off (transactions wait in the mempool until {@link EvmDevnet.mine}) or
   * back on (`evm_setAutomine`).
   */
  setAutomine(on: boolean): Promise<void>
  /** Mines one block now (`evm_mine`). */
  mine(): Promise<void>
  /**
   * Moves the chain's clock `seconds` forward and mines a block with that timestamp (anvil
   * `evm_increaseTime`, `evm_mine`): authorizations whose `validBefore` it passes expire.
   */
  increaseTime(seconds: number): Promise<void>
  /** Stops the chain; all state is lost. */
  stop(): Promise<void>
}

export interface StartEvmDevnetOptions {
  /** anvil port; default a free one. */
  port?: number
  /** Number of funded payers; default 3. */
  payers?: number
  /** USDC minted to each payer, atomic units; default 100 USDC (`100_000_000n`). */
  payerBalance?: bigint
  /** `testnet` poses as Base Sepolia (chain 84532, its USDC named "USDC"); default `mainnet`. */
  stage?: Stage
  /**
   * Install our devnet `batch-settlement` escrow and ERC-3009 deposit collector at the SDK's
   * addresses (src/devnet/batch-settlement.ts); default true.
   */
  batchSettlement?: boolean
}

/**
 * Starts anvil as chain 8453 and installs USDC (with EIP-3009) and Multicall3 at their Base
 * mainnet addresses, so the SDK's `exact` EVM scheme verifies and settles on it unchanged. With
 * `stage: 'testnet'` the chain is 84532 and USDC sits at Base Sepolia's address, named "USDC".
 * Unless `batchSettlement: false`, our devnet `batch-settlement` escrow and its ERC-3009 deposit
 * collector sit at the SDK's addresses too.
 *
 * @example
 * const devnet = await startEvmDevnet()
 * const facilitator = new x402Facilitator()
 * registerDevEvmScheme(facilitator, { rpcUrl: devnet.rpcUrl, privateKey: devnet.facilitatorPrivateKey })
 * // … pay from devnet.payers[0] to devnet.payTo …
 * await devnet.stop()
 *
 * @throws Error if anvil does not start or a setup transaction fails (anvil is stopped first)
 */
export async function startEvmDevnet(options: StartEvmDevnetOptions = {}): Promise<EvmDevnet> {
  const payerCount = options.payers ?? 3
  const payerBalance = options.payerBalance ?? 100_000_000n
  const stage = options.stage ?? 'mainnet'
  const { chain, network, usdc, domain } = devStage(stage).evm
  const anvil = await startAnvil({ port: options.port, chainId: chain.id })
  const { rpcUrl } = anvil
  const facilitator = devAccount(0)
  const payers = Array.from({ length: payerCount }, (_, i) => devAccount(2 + i))
  try {
    await Promise.all([
      installUsdc(rpcUrl, stage),
      installMulticall3(rpcUrl),
      options.batchSettlement === false ? undefined : installBatchSettlement(rpcUrl),
    ])
    if (payerBalance > 0n) {
      await Promise.all(payers.map((p) => mintUsdc(rpcUrl, p.address, payerBalance, stage)))
    }
  } catch (err) {
    await anvil.stop()
    throw err
  }
  return {
    rpcUrl,
    chainId: anvil.chainId,
    network,
    usdcAddress: usdc,
    usdcDomain: { ...domain },
    facilitatorPrivateKey: facilitator.privateKey,
    facilitatorAddress: facilitator.address,
    payTo: devAccount(1).address,
    payers,
    usdcBalance: (address) => usdcBalance(rpcUrl, address, stage),
    mint: (address, amount) => mintUsdc(rpcUrl, address, amount, stage),
    cancelAuthorization: (payer, nonce) =>
      cancelUsdcAuthorization(rpcUrl, payer.privateKey, nonce, stage),
    signTransfer: (payer, transfer) => signUsdcTransfer(payer.privateKey, transfer, stage),
    executeTransfers: (sender, transfers) =>
      executeUsdcTransfers(rpcUrl, sender.privateKey, transfers, stage),
    async setAutomine(on) {
      await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setAutomine(on)
    },
    async mine() {
      await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).mine({ blocks: 1 })
    },
    async increaseTime(seconds) {
      const node = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
      await node.increaseTime({ seconds })
      await node.mine({ blocks: 1 })
    },
    stop: anvil.stop,
  }
}
