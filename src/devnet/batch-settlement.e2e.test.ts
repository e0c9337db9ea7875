import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { PaymentRequirements } from '@x402/core/types'
import {
  BATCH_SETTLEMENT_ADDRESS,
  BATCH_SETTLEMENT_DOMAIN,
  claimBatchTypes,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  refundTypes,
  voucherTypes,
} from '@x402/evm'
import {
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  signVoucher,
} from '@x402/evm/batch-settlement/client'
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  domainSeparator,
  encodeAbiParameters,
  type Hex,
  hashTypedData,
  http,
  keccak256,
  parseEventLogs,
  toHex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compileDevnetContracts } from '../../scripts/devnet-solidity.js'
import { type DevAccount, devAccount } from './anvil.js'
import {
  BATCH_SETTLEMENT_ERC3009_COLLECTOR,
  BATCH_SETTLEMENT_ESCROW,
  type BatchSettlementChannelConfig,
  batchSettlementAbi,
  installBatchSettlement,
} from './batch-settlement.js'
import {
  batchSettlementRuntimeBytecode,
  erc3009DepositCollectorAbi,
  erc3009DepositCollectorRuntimeBytecode,
} from './contracts/batch-settlement.js'
import { type EvmDevnet, startEvmDevnet } from './evm.js'

// Our devnet escrow on anvil, driven with the SDK's own signing helpers (vouchers, ERC-3009
// deposit authorizations) and its exported EIP-712 types, against the real FiatTokenV2_2.

let devnet: EvmDevnet
let reader: ReturnType<typeof createPublicClient>
const receiverAuthorizer = devAccount(9)
let saltCounter = 0

beforeAll(async () => {
  devnet = await startEvmDevnet({ payers: 3 })
  reader = createPublicClient({ transport: http(devnet.rpcUrl), pollingInterval: 50 })
})

afterAll(async () => {
  await devnet?.stop()
})

function payer(i: number): DevAccount {
  return devnet.payers[i] as DevAccount
}

/** A fresh channel of `from` (payer authorizer = the payer, as the SDK's client sets it). */
function channel(
  from: DevAccount,
  overrides: Partial<BatchSettlementChannelConfig> = {},
): BatchSettlementChannelConfig {
  saltCounter += 1
  return {
    payer: from.address,
    payerAuthorizer: from.address,
    receiver: devnet.payTo,
    receiverAuthorizer: receiverAuthorizer.address,
    token: devnet.usdcAddress,
    withdrawDelay: 900,
    salt: toHex(saltCounter, { size: 32 }),
    ...overrides,
  }
}

function requirementsFor(config: BatchSettlementChannelConfig): PaymentRequirements {
  return {
    scheme: 'batch-settlement',
    network: devnet.network,
    amount: '1000',
    asset: config.token,
    payTo: config.receiver,
    maxTimeoutSeconds: 300,
    extra: {
      ...devnet.usdcDomain,
      receiverAuthorizer: config.receiverAuthorizer,
      withdrawDelay: config.withdrawDelay,
    },
  }
}

function domain() {
  return {
    ...BATCH_SETTLEMENT_DOMAIN,
    chainId: devnet.chainId,
    verifyingContract: BATCH_SETTLEMENT_ADDRESS,
  } as const
}

const idOf = (config: BatchSettlementChannelConfig) => computeChannelId(config, devnet.chainId)

/**
 * The escrow's `deposit` call data for `amount`, signed by the payer with the SDK's
 * createBatchSettlementEIP3009DepositPayload (ReceiveWithAuthorization to the collector, nonce
 * bound to the channel), encoded as the SDK's facilitator encodes the collector data.
 */
async function depositArgs(from: DevAccount, config: BatchSettlementChannelConfig, amount: bigint) {
  const signer = privateKeyToAccount(from.privateKey)
  const { payload } = await createBatchSettlementEIP3009DepositPayload(
    signer,
    2,
    requirementsFor(config),
    config,
    amount.toString(),
    '0',
  )
  const p = payload as {
    voucher: { channelId: Hex }
    deposit: {
      authorization: {
        erc3009Authorization: { validAfter: string; validBefore: string; salt: Hex; signature: Hex }
      }
    }
  }
  expect(p.voucher.channelId).toBe(idOf(config))
  const auth = p.deposit.authorization.erc3009Authorization
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [BigInt(auth.validAfter), BigInt(auth.validBefore), BigInt(auth.salt), auth.signature],
  )
  return [config, amount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, collectorData] as const
}

/** Sends an escrow transaction from the relayer (dev account 0) and expects it mined. */
function send(functionName: string, args: readonly unknown[]): Promise<Hex> {
  return sendAs(devAccount(0), functionName, args)
}

/** The custom error (or revert string) the escrow call fails with, simulated from `from`. */
async function revertOf(
  functionName: string,
  args: readonly unknown[],
  from: Address = devnet.facilitatorAddress,
): Promise<string> {
  try {
    await reader.simulateContract({
      account: from,
      address: BATCH_SETTLEMENT_ESCROW,
      abi: [...batchSettlementAbi, ...erc3009DepositCollectorAbi],
      functionName,
      args,
    } as unknown as Parameters<typeof reader.simulateContract>[0])
  } catch (err) {
    const reverted =
      err instanceof BaseError
        ? err.walk((e) => e instanceof ContractFunctionRevertedError)
        : undefined
    if (reverted instanceof ContractFunctionRevertedError) {
      // A revert string (the token's) is the error `Error(string)`: return the string.
      return reverted.reason ?? reverted.data?.errorName ?? 'reverted'
    }
    throw err
  }
  throw new Error(`${functionName} did not revert`)
}

async function deposit(from: DevAccount, config: BatchSettlementChannelConfig, amount: bigint) {
  await send('deposit', await depositArgs(from, config, amount))
}

async function voucher(from: DevAccount, config: BatchSettlementChannelConfig, max: bigint) {
  const v = await signVoucher(
    privateKeyToAccount(from.privateKey),
    idOf(config),
    max.toString(),
    devnet.network,
  )
  return { voucher: { channel: config, maxClaimableAmount: max }, signature: v.signature }
}

type Row = Awaited<ReturnType<typeof voucher>> & { totalClaimed: bigint }

/** The receiver authorizer's EIP-712 ClaimBatch signature (the SDK's exported types). */
function signClaims(rows: Row[], by: DevAccount = receiverAuthorizer): Promise<Hex> {
  return privateKeyToAccount(by.privateKey).signTypedData({
    domain: domain(),
    types: claimBatchTypes,
    primaryType: 'ClaimBatch',
    message: {
      claims: rows.map((r) => ({
        channelId: idOf(r.voucher.channel),
        maxClaimableAmount: r.voucher.maxClaimableAmount,
        totalClaimed: r.totalClaimed,
      })),
    },
  })
}

function signRefund(config: BatchSettlementChannelConfig, amount: bigint, nonce: bigint) {
  return privateKeyToAccount(receiverAuthorizer.privateKey).signTypedData({
    domain: domain(),
    types: refundTypes,
    primaryType: 'Refund',
    message: { channelId: idOf(config), nonce, amount },
  })
}

async function channelState(config: BatchSettlementChannelConfig) {
  const [balance, totalClaimed] = await reader.readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'channels',
    args: [idOf(config)],
  })
  return { balance, totalClaimed }
}

async function receiverState(receiver: Address) {
  const [totalClaimed, totalSettled] = await reader.readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'receivers',
    args: [receiver, devnet.usdcAddress],
  })
  return { totalClaimed, totalSettled }
}

function refundNonce(config: BatchSettlementChannelConfig): Promise<bigint> {
  return reader.readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'refundNonce',
    args: [idOf(config)],
  })
}

const usdc = (address: Address) => devnet.usdcBalance(address)

/** `batchSettlementABI` as the installed @x402/evm declares it (not a public export). */
async function sdkBatchSettlementAbi(): Promise<{ abi: Abi; esmDir: string }> {
  const cjsEntry = createRequire(import.meta.url).resolve('@x402/evm')
  const esmDir = join(dirname(cjsEntry), '../esm')
  for (const file of readdirSync(esmDir)) {
    if (!/^chunk-.*\.mjs$/.test(file)) continue
    if (!readFileSync(join(esmDir, file), 'utf8').includes('var batchSettlementABI =')) continue
    const mod = (await import(pathToFileURL(join(esmDir, file)).href)) as {
      batchSettlementABI?: Abi
    }
    if (mod.batchSettlementABI) return { abi: mod.batchSettlementABI, esmDir }
  }
  throw new Error('batchSettlementABI not found in @x402/evm/dist/esm')
}

/**
 * An ABI item without solc's `internalType` and with its keys sorted, for comparing with the SDK's
 * hand-written ABI as JSON.
 */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain)
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== 'internalType')
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, plain(v)]),
    )
  }
  return value
}

describe('batch-settlement escrow: compatibility with @x402/evm', () => {
  it('has every function and event of the SDK ABI, with the same names, types and outputs', async () => {
    const { abi: sdkAbi, esmDir } = await sdkBatchSettlementAbi()
    const ours = batchSettlementAbi as unknown as Abi
    const missing = sdkAbi.filter((item) => {
      if (item.type !== 'function' && item.type !== 'event') return true
      const match = ours.find((o) => o.type === item.type && 'name' in o && o.name === item.name)
      return JSON.stringify(plain(match)) !== JSON.stringify(plain(item))
    })
    expect(missing).toEqual([])
    expect(sdkAbi.length).toBe(19)

    // What the SDK's client, server and facilitator call or decode, read from its dist code.
    const used = new Set<string>()
    for (const file of readdirSync(esmDir, { recursive: true }) as string[]) {
      if (!file.endsWith('.mjs')) continue
      const text = readFileSync(join(esmDir, file), 'utf8')
      for (const m of text.matchAll(
        /abi: batchSettlementABI,\s*(?:functionName|eventName): "(\w+)"/g,
      )) {
        used.add(m[1] as string)
      }
    }
    expect([...used].sort()).toEqual([
      'Settled',
      'channels',
      'claimWithSignature',
      'deposit',
      'multicall',
      'pendingWithdrawals',
      'receivers',
      'refundNonce',
      'refundWithSignature',
      'settle',
    ])
    for (const name of used) {
      expect(ours.some((o) => 'name' in o && o.name === name)).toBe(true)
    }
  })

  it('computes the same channel ids as the SDK for several configs', async () => {
    const [a, b] = [payer(0), payer(1)]
    const configs: BatchSettlementChannelConfig[] = [
      channel(a),
      channel(a, { payerAuthorizer: '0x0000000000000000000000000000000000000000' }),
      channel(b, { withdrawDelay: 2_592_000, salt: `0x${'ff'.repeat(32)}` }),
      channel(b, {
        receiver: devAccount(7).address,
        receiverAuthorizer: devAccount(8).address,
        token: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        withdrawDelay: 3600,
      }),
    ]
    const ids = await Promise.all(
      configs.map((config) =>
        reader.readContract({
          address: BATCH_SETTLEMENT_ESCROW,
          abi: batchSettlementAbi,
          functionName: 'getChannelId',
          args: [config],
        }),
      ),
    )
    expect(ids).toEqual(configs.map(idOf))
    expect(new Set(ids).size).toBe(configs.length)
    // Bound to the chain: the same config hashes differently elsewhere.
    expect(computeChannelId(configs[0] as BatchSettlementChannelConfig, 1)).not.toBe(ids[0])
    expect(await installBatchSettlement(devnet.rpcUrl)).toMatch(/^0x[0-9a-f]{64}$/)
  })

  it('computes the voucher, refund and claim-batch digests the SDK types define', async () => {
    const config = channel(payer(0))
    const id = idOf(config)
    const read = <F extends 'getVoucherDigest' | 'getRefundDigest' | 'DOMAIN_SEPARATOR'>(
      functionName: F,
      args: readonly unknown[],
    ) =>
      reader.readContract({
        address: BATCH_SETTLEMENT_ESCROW,
        abi: batchSettlementAbi,
        functionName,
        args,
      } as Parameters<typeof reader.readContract>[0])
    expect(await read('DOMAIN_SEPARATOR', [])).toBe(domainSeparator({ domain: domain() }))
    expect(await read('getVoucherDigest', [id, 12_345n])).toBe(
      hashTypedData({
        domain: domain(),
        types: voucherTypes,
        primaryType: 'Voucher',
        message: { channelId: id, maxClaimableAmount: 12_345n },
      }),
    )
    expect(await read('getRefundDigest', [id, 7n, 500n])).toBe(
      hashTypedData({
        domain: domain(),
        types: refundTypes,
        primaryType: 'Refund',
        message: { channelId: id, nonce: 7n, amount: 500n },
      }),
    )
    const other = channel(payer(1))
    const rows: Row[] = [
      { ...(await voucher(payer(0), config, 900n)), totalClaimed: 800n },
      { ...(await voucher(payer(1), other, 50n)), totalClaimed: 50n },
    ]
    expect(
      await reader.readContract({
        address: BATCH_SETTLEMENT_ESCROW,
        abi: batchSettlementAbi,
        functionName: 'getClaimBatchDigest',
        args: [rows],
      }),
    ).toBe(
      hashTypedData({
        domain: domain(),
        types: claimBatchTypes,
        primaryType: 'ClaimBatch',
        message: {
          claims: rows.map((r) => ({
            channelId: idOf(r.voucher.channel),
            maxClaimableAmount: r.voucher.maxClaimableAmount,
            totalClaimed: r.totalClaimed,
          })),
        },
      }),
    )
    expect(
      await reader.readContract({
        address: BATCH_SETTLEMENT_ESCROW,
        abi: batchSettlementAbi,
        functionName: 'CHANNEL_CONFIG_TYPEHASH',
      }),
    ).toBe(
      keccak256(
        toHex(
          'ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)',
        ),
      ),
    )
  })

  it('is the code compiled from the committed sources (scripts/build-devnet-contracts.ts)', async () => {
    const compiled = compileDevnetContracts()
    expect(compiled.batchSettlement.runtime).toBe(batchSettlementRuntimeBytecode)
    expect(compiled.erc3009DepositCollector.runtime).toBe(erc3009DepositCollectorRuntimeBytecode)
    expect(compiled.batchSettlement.abi).toEqual(batchSettlementAbi)
    expect(compiled.erc3009DepositCollector.abi).toEqual(erc3009DepositCollectorAbi)
    expect(await reader.getCode({ address: BATCH_SETTLEMENT_ESCROW })).toBe(
      batchSettlementRuntimeBytecode,
    )
    expect(await reader.getCode({ address: BATCH_SETTLEMENT_ERC3009_COLLECTOR })).toBe(
      erc3009DepositCollectorRuntimeBytecode,
    )
  })
})

describe('batch-settlement escrow on anvil', () => {
  it('takes a deposit through the ERC-3009 collector: exactly the authorized USDC moves', async () => {
    const from = payer(0)
    const config = channel(from)
    const [payerBefore, escrowBefore] = await Promise.all([
      usdc(from.address),
      usdc(BATCH_SETTLEMENT_ESCROW),
    ])
    const args = await depositArgs(from, config, 1_234_567n)
    const hash = await send('deposit', args)

    expect(await usdc(from.address)).toBe(payerBefore - 1_234_567n)
    expect(await usdc(BATCH_SETTLEMENT_ESCROW)).toBe(escrowBefore + 1_234_567n)
    expect(await usdc(BATCH_SETTLEMENT_ERC3009_COLLECTOR)).toBe(0n)
    expect(await channelState(config)).toEqual({ balance: 1_234_567n, totalClaimed: 0n })
    const receipt = await reader.getTransactionReceipt({ hash })
    const events = parseEventLogs({ abi: batchSettlementAbi, logs: receipt.logs })
    expect(events.map((e) => e.eventName)).toEqual(['ChannelCreated', 'Deposited'])

    // The same authorization again: the token refuses the used nonce, nothing moves.
    expect(await revertOf('deposit', args)).toMatch(/authorization is used or canceled/)
    // A top-up adds to the balance without creating the channel again.
    await deposit(from, config, 1000n)
    expect(await channelState(config)).toEqual({ balance: 1_235_567n, totalClaimed: 0n })
    expect(await usdc(from.address)).toBe(payerBefore - 1_235_567n)
  })

  it('refuses a deposit whose channel the authorization was not signed for', async () => {
    const from = payer(0)
    const config = channel(from)
    const [, amount, collector, data] = await depositArgs(from, config, 5000n)
    const before = await usdc(from.address)
    // Another salt is another channel: the authorization's nonce no longer matches.
    expect(await revertOf('deposit', [channel(from), amount, collector, data])).toMatch(
      /invalid signature/,
    )
    expect(await revertOf('deposit', [config, 4999n, collector, data])).toMatch(/invalid signature/)
    expect(
      await revertOf('deposit', [{ ...config, withdrawDelay: 899 }, amount, collector, data]),
    ).toBe('WithdrawDelayOutOfRange')
    expect(await usdc(from.address)).toBe(before)
  })

  it('reverts a claim beyond the voucher or beyond the channel balance', async () => {
    const from = payer(0)
    const config = channel(from)
    await deposit(from, config, 10_000n)

    const beyondVoucher: Row = { ...(await voucher(from, config, 3000n)), totalClaimed: 3001n }
    expect(
      await revertOf('claimWithSignature', [[beyondVoucher], await signClaims([beyondVoucher])]),
    ).toBe('ClaimExceedsVoucher')
    const beyondBalance: Row = { ...(await voucher(from, config, 20_000n)), totalClaimed: 10_001n }
    expect(
      await revertOf('claimWithSignature', [[beyondBalance], await signClaims([beyondBalance])]),
    ).toBe('ClaimExceedsBalance')
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 0n })

    // Up to the balance, under a voucher above it, is a valid claim.
    const toBalance: Row = { ...(await voucher(from, config, 20_000n)), totalClaimed: 10_000n }
    await send('claimWithSignature', [[toBalance], await signClaims([toBalance])])
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 10_000n })
  })

  it('reverts a claim with a bad payer signature or a bad receiver-authorizer signature', async () => {
    const from = payer(1)
    const config = channel(from)
    await deposit(from, config, 10_000n)

    const forged: Row = { ...(await voucher(payer(2), config, 5000n)), totalClaimed: 5000n }
    expect(await revertOf('claimWithSignature', [[forged], await signClaims([forged])])).toBe(
      'InvalidVoucherSignature',
    )
    const good: Row = { ...(await voucher(from, config, 5000n)), totalClaimed: 5000n }
    // The payer's voucher, but the batch signed by someone else, or over other totals.
    expect(await revertOf('claimWithSignature', [[good], await signClaims([good], payer(2))])).toBe(
      'InvalidAuthorizerSignature',
    )
    const lower = await signClaims([{ ...good, totalClaimed: 4000n }])
    expect(await revertOf('claimWithSignature', [[good], lower])).toBe('InvalidAuthorizerSignature')
    // `claim` without a signature is for the receiver side only.
    expect(await revertOf('claim', [[good]], from.address)).toBe('Unauthorized')
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 0n })

    await send('claimWithSignature', [[good], await signClaims([good])])
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 5000n })
  })

  it('checks vouchers of a channel without payer authorizer against the payer (receiver claims)', async () => {
    const from = payer(2)
    const config = channel(from, { payerAuthorizer: '0x0000000000000000000000000000000000000000' })
    await deposit(from, config, 2000n)
    const forged: Row = { ...(await voucher(payer(1), config, 700n)), totalClaimed: 700n }
    expect(await revertOf('claimWithSignature', [[forged], await signClaims([forged])])).toBe(
      'InvalidVoucherSignature',
    )
    expect(await revertOf('claim', [[forged]], devnet.payTo)).toBe('InvalidVoucherSignature')
    // The receiver claims directly, without a receiver-authorizer signature.
    const good: Row = { ...(await voucher(from, config, 700n)), totalClaimed: 700n }
    await sendAs(devAccount(1), 'claim', [[good]])
    expect(await channelState(config)).toEqual({ balance: 2000n, totalClaimed: 700n })
  })

  it('adds nothing when a claim is replayed or an older voucher is claimed', async () => {
    const from = payer(0)
    const receiver = devAccount(6).address
    const config = channel(from, { receiver })
    await deposit(from, config, 10_000n)
    const before = await receiverState(receiver)

    const older: Row = { ...(await voucher(from, config, 1000n)), totalClaimed: 1000n }
    const newer: Row = { ...(await voucher(from, config, 2500n)), totalClaimed: 2500n }
    await send('claimWithSignature', [[newer], await signClaims([newer])])
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 2500n })

    const replay = await send('claimWithSignature', [[newer], await signClaims([newer])])
    await send('claimWithSignature', [[older], await signClaims([older])])
    expect(await channelState(config)).toEqual({ balance: 10_000n, totalClaimed: 2500n })
    expect(await receiverState(receiver)).toEqual({
      totalClaimed: before.totalClaimed + 2500n,
      totalSettled: before.totalSettled,
    })
    const logs = (await reader.getTransactionReceipt({ hash: replay })).logs
    expect(parseEventLogs({ abi: batchSettlementAbi, logs })).toEqual([])
  })

  it('settles exactly the claimed amount of several channels to the receiver', async () => {
    const receiver = devAccount(7).address
    const a = channel(payer(0), { receiver })
    const b = channel(payer(1), { receiver })
    await deposit(payer(0), a, 5000n)
    await deposit(payer(1), b, 8000n)
    const rows: Row[] = [
      { ...(await voucher(payer(0), a, 1500n)), totalClaimed: 1200n },
      { ...(await voucher(payer(1), b, 4000n)), totalClaimed: 3999n },
    ]
    await send('claimWithSignature', [rows, await signClaims(rows)])
    const [receiverBefore, escrowBefore] = await Promise.all([
      usdc(receiver),
      usdc(BATCH_SETTLEMENT_ESCROW),
    ])
    expect(receiverBefore).toBe(0n)
    expect(await receiverState(receiver)).toEqual({ totalClaimed: 5199n, totalSettled: 0n })

    const hash = await send('settle', [receiver, devnet.usdcAddress])
    expect(await usdc(receiver)).toBe(5199n)
    expect(await usdc(BATCH_SETTLEMENT_ESCROW)).toBe(escrowBefore - 5199n)
    expect(await receiverState(receiver)).toEqual({ totalClaimed: 5199n, totalSettled: 5199n })
    const settled = parseEventLogs({
      abi: batchSettlementAbi,
      eventName: 'Settled',
      logs: (await reader.getTransactionReceipt({ hash })).logs,
    })
    expect(settled.map((e) => e.args)).toEqual([
      { receiver, token: devnet.usdcAddress, sender: devnet.facilitatorAddress, amount: 5199n },
    ])
    // Claims stay in the channels' accounting; only the escrow's tokens moved.
    expect(await channelState(a)).toEqual({ balance: 5000n, totalClaimed: 1200n })

    // Settling again moves nothing.
    await send('settle', [receiver, devnet.usdcAddress])
    expect(await usdc(receiver)).toBe(5199n)
  })

  it('advances the refund nonce on every refund and refuses a stale refund signature', async () => {
    const from = payer(1)
    const config = channel(from)
    await deposit(from, config, 10_000n)
    const claimed: Row = { ...(await voucher(from, config, 3000n)), totalClaimed: 3000n }
    await send('claimWithSignature', [[claimed], await signClaims([claimed])])
    expect(await refundNonce(config)).toBe(0n)
    const payerBefore = await usdc(from.address)

    // A signature for a future nonce is refused; the current one refunds exactly its amount.
    expect(
      await revertOf('refundWithSignature', [
        config,
        1000n,
        1n,
        await signRefund(config, 1000n, 1n),
      ]),
    ).toBe('InvalidRefundNonce')
    const first = await signRefund(config, 1000n, 0n)
    await send('refundWithSignature', [config, 1000n, 0n, first])
    expect(await refundNonce(config)).toBe(1n)
    expect(await usdc(from.address)).toBe(payerBefore + 1000n)
    expect(await channelState(config)).toEqual({ balance: 9000n, totalClaimed: 3000n })

    // Replaying it, or another amount under the current nonce's signature, fails.
    expect(await revertOf('refundWithSignature', [config, 1000n, 0n, first])).toBe(
      'InvalidRefundNonce',
    )
    const second = await signRefund(config, 500n, 1n)
    expect(await revertOf('refundWithSignature', [config, 600n, 1n, second])).toBe(
      'InvalidAuthorizerSignature',
    )
    // A direct refund by the receiver advances the nonce too, so `second` goes stale.
    expect(await revertOf('refund', [config, 100n], from.address)).toBe('Unauthorized')
    await sendAs(devAccount(1), 'refund', [config, 100n])
    expect(await refundNonce(config)).toBe(2n)
    expect(await revertOf('refundWithSignature', [config, 500n, 1n, second])).toBe(
      'InvalidRefundNonce',
    )
    expect(await usdc(from.address)).toBe(payerBefore + 1100n)

    // Asking for more than the unclaimed rest refunds the rest; claimed funds stay.
    await send('refundWithSignature', [config, 10_000n, 2n, await signRefund(config, 10_000n, 2n)])
    expect(await usdc(from.address)).toBe(payerBefore + 7000n)
    expect(await channelState(config)).toEqual({ balance: 3000n, totalClaimed: 3000n })
    // With nothing left to refund the nonce still advances and nothing moves.
    await send('refundWithSignature', [config, 1n, 3n, await signRefund(config, 1n, 3n)])
    expect(await refundNonce(config)).toBe(4n)
    expect(await usdc(from.address)).toBe(payerBefore + 7000n)
    expect(await channelState(config)).toEqual({ balance: 3000n, totalClaimed: 3000n })
  })

  it('finalizes a withdrawal only after its delay, returning exactly the unclaimed rest', async () => {
    const from = payer(2)
    const config = channel(from, { withdrawDelay: 3600 })
    await deposit(from, config, 10_000n)
    const claimed: Row = { ...(await voucher(from, config, 2500n)), totalClaimed: 2500n }
    await send('claimWithSignature', [[claimed], await signClaims([claimed])])

    expect(await revertOf('initiateWithdraw', [config, 7501n], from.address)).toBe(
      'WithdrawExceedsAvailable',
    )
    expect(await revertOf('initiateWithdraw', [config, 7500n])).toBe('Unauthorized')
    await sendAs(from, 'initiateWithdraw', [config, 7500n])
    const [amount, initiatedAt] = await reader.readContract({
      address: BATCH_SETTLEMENT_ESCROW,
      abi: batchSettlementAbi,
      functionName: 'pendingWithdrawals',
      args: [idOf(config)],
    })
    expect(amount).toBe(7500n)
    const block = await reader.getBlock()
    expect(initiatedAt).toBe(Number(block.timestamp))

    const payerBefore = await usdc(from.address)
    await devnet.increaseTime(3000)
    expect(await revertOf('finalizeWithdraw', [config], from.address)).toBe(
      'WithdrawDelayNotElapsed',
    )
    await devnet.increaseTime(600)
    await sendAs(from, 'finalizeWithdraw', [config])
    expect(await usdc(from.address)).toBe(payerBefore + 7500n)
    expect(await channelState(config)).toEqual({ balance: 2500n, totalClaimed: 2500n })
    expect(
      await reader.readContract({
        address: BATCH_SETTLEMENT_ESCROW,
        abi: batchSettlementAbi,
        functionName: 'pendingWithdrawals',
        args: [idOf(config)],
      }),
    ).toEqual([0n, 0])
    expect(await revertOf('finalizeWithdraw', [config], from.address)).toBe('NoPendingWithdrawal')
  })
})

async function sendAs(
  from: DevAccount,
  functionName: string,
  args: readonly unknown[],
): Promise<Hex> {
  const wallet = createWalletClient({
    account: privateKeyToAccount(from.privateKey),
    transport: http(devnet.rpcUrl),
  })
  const hash = await wallet.writeContract({
    chain: null,
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName,
    args,
  } as unknown as Parameters<typeof wallet.writeContract>[0])
  const receipt = await reader.waitForTransactionReceipt({ hash })
  expect(receipt.status).toBe('success')
  return hash
}
