import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient } from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { getDefaultAsset } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import {
  type Address,
  createPublicClient,
  domainSeparator,
  erc20Abi,
  type Hash,
  http,
  parseAbi,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevAccount, devAccount } from './anvil.js'
import { type EvmDevnet, startEvmDevnet } from './evm.js'
import { registerDevEvmScheme } from './evm-facilitator.js'
import { type FacilitatorServer, startFacilitatorServer } from './facilitator-server.js'
import { MULTICALL3_ADDRESS } from './multicall3.js'
import { USDC_ADDRESS } from './usdc.js'

let devnet: EvmDevnet
let server: FacilitatorServer
let facilitatorClient: HTTPFacilitatorClient
let requirements: PaymentRequirements

beforeAll(async () => {
  devnet = await startEvmDevnet()
  const facilitator = new x402Facilitator()
  registerDevEvmScheme(facilitator, {
    rpcUrl: devnet.rpcUrl,
    privateKey: devnet.facilitatorPrivateKey,
  })
  server = await startFacilitatorServer(facilitator)
  facilitatorClient = new HTTPFacilitatorClient({ url: server.url })
  requirements = {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '1000',
    asset: USDC_ADDRESS,
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  }
})

afterAll(async () => {
  await server?.stop()
  await devnet?.stop()
})

/** Signs an EIP-3009 authorization with the official client, as a buyer would. */
function pay(payer: DevAccount): Promise<PaymentPayload> {
  const client = new x402Client().register(
    'eip155:8453',
    new ExactEvmScheme(privateKeyToAccount(payer.privateKey)),
  )
  return client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://payload.tools/v1/hash' },
    accepts: [requirements],
  })
}

async function balances(...addresses: Address[]): Promise<bigint[]> {
  return Promise.all(addresses.map((a) => devnet.usdcBalance(a)))
}

describe('EVM devnet', () => {
  it('uses anvil dev accounts: facilitator 0, payTo 1, payers 2.. funded with 100 USDC', async () => {
    expect(devnet.chainId).toBe(8453)
    expect(devnet.network).toBe('eip155:8453')
    expect(devnet.facilitatorAddress).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266')
    expect(devnet.payTo).toBe('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
    expect(devnet.payers.map((p) => p.address)).toEqual([
      '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
      '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
      '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65',
    ])
    expect(await balances(devnet.payTo, ...devnet.payers.map((p) => p.address))).toEqual([
      0n,
      100_000_000n,
      100_000_000n,
      100_000_000n,
    ])
  })

  it('serves USDC at the Base address with the Base EIP-712 domain', async () => {
    const usdc = getDefaultAsset('eip155:8453')
    expect(devnet.usdcAddress).toBe(usdc.asset)
    const reader = createPublicClient({ chain: base, transport: http(devnet.rpcUrl) })
    const read = <F extends 'name' | 'symbol' | 'decimals'>(functionName: F) =>
      reader.readContract({ address: USDC_ADDRESS, abi: erc20Abi, functionName })
    const extra = parseAbi([
      'function version() pure returns (string)',
      'function DOMAIN_SEPARATOR() view returns (bytes32)',
    ])
    expect(await read('name')).toBe('USD Coin')
    expect(await read('symbol')).toBe('USDC')
    expect(await read('decimals')).toBe(6)
    expect(
      await reader.readContract({ address: USDC_ADDRESS, abi: extra, functionName: 'version' }),
    ).toBe('2')
    expect(
      await reader.readContract({
        address: USDC_ADDRESS,
        abi: extra,
        functionName: 'DOMAIN_SEPARATOR',
      }),
    ).toBe(
      domainSeparator({
        domain: {
          name: 'USD Coin',
          version: '2',
          chainId: 8453,
          verifyingContract: usdc.asset as `0x${string}`,
        },
      }),
    )
  })

  it('serves Multicall3 tryAggregate at the canonical address', async () => {
    const reader = createPublicClient({ chain: base, transport: http(devnet.rpcUrl) })
    const [payer] = devnet.payers
    const results = await reader.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      allowFailure: true,
      contracts: [
        { address: USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [devnet.payTo] },
        {
          address: USDC_ADDRESS,
          abi: erc20Abi,
          functionName: 'balanceOf',
          args: [payer?.address ?? devnet.payTo],
        },
        { address: USDC_ADDRESS, abi: erc20Abi, functionName: 'name' },
      ],
    })
    expect(results.map((r) => r.status)).toEqual(['success', 'success', 'success'])
    expect(results[2]?.result).toBe('USD Coin')
  })
})

describe('facilitator over HTTP with the official x402 client', () => {
  it('GET /supported lists exact and batch-settlement on eip155:8453 and the signer', async () => {
    expect(await facilitatorClient.getSupported()).toEqual({
      kinds: [
        { x402Version: 2, scheme: 'exact', network: 'eip155:8453' },
        { x402Version: 2, scheme: 'batch-settlement', network: 'eip155:8453' },
      ],
      extensions: [],
      signers: { 'eip155:*': [devnet.facilitatorAddress] },
    })
  })

  it('verifies and settles a payment, moving exactly the amount, and refuses a replay', async () => {
    const payer = devnet.payers[0] as DevAccount
    const payload = await pay(payer)
    const [payToBefore, payerBefore] = await balances(devnet.payTo, payer.address)

    const verified = await facilitatorClient.verify(payload, requirements)
    const settled = await facilitatorClient.settle(payload, requirements)

    expect(verified).toEqual({ isValid: true, payer: payer.address })
    expect(settled).toEqual({
      success: true,
      payer: payer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'eip155:8453',
    })
    const receipt = await createPublicClient({
      chain: base,
      transport: http(devnet.rpcUrl),
    }).getTransactionReceipt({ hash: settled.transaction as Hash })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(devnet.facilitatorAddress.toLowerCase())
    expect(receipt.to).toBe(USDC_ADDRESS.toLowerCase())
    expect(await balances(devnet.payTo, payer.address)).toEqual([
      (payToBefore ?? 0n) + 1000n,
      (payerBefore ?? 0n) - 1000n,
    ])

    const replay = await facilitatorClient.settle(payload, requirements)
    expect(replay).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_evm_nonce_already_used',
      transaction: '',
      payer: payer.address,
      network: 'eip155:8453',
    })
    expect(await facilitatorClient.verify(payload, requirements)).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_nonce_already_used',
      payer: payer.address,
    })
    expect(await balances(devnet.payTo, payer.address)).toEqual([
      (payToBefore ?? 0n) + 1000n,
      (payerBefore ?? 0n) - 1000n,
    ])
  })

  it('rejects a payer without USDC as insufficient balance', async () => {
    const broke = devAccount(20)
    const [brokeBefore, payToBefore] = await balances(broke.address, devnet.payTo)
    expect(brokeBefore).toBe(0n)
    const payload = await pay(broke)
    expect(await facilitatorClient.verify(payload, requirements)).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_insufficient_balance',
      payer: broke.address,
    })
    expect(await facilitatorClient.settle(payload, requirements)).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_evm_insufficient_balance',
      transaction: '',
      payer: broke.address,
    })
    expect(await balances(broke.address, devnet.payTo)).toEqual([0n, payToBefore])
  })

  it('settles after mint() funds a new payer', async () => {
    const fresh = devAccount(21)
    await devnet.mint(fresh.address, 2500n)
    const before = await devnet.usdcBalance(devnet.payTo)
    const payload = await pay(fresh)
    expect((await facilitatorClient.settle(payload, requirements)).success).toBe(true)
    expect(await balances(fresh.address, devnet.payTo)).toEqual([1500n, before + 1000n])
  })

  it('settles concurrent payments from one facilitator account without nonce clashes', async () => {
    const before = await devnet.usdcBalance(devnet.payTo)
    const payloads = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        pay(devnet.payers[i % devnet.payers.length] as DevAccount),
      ),
    )
    const settled = await Promise.all(
      payloads.map((p) => facilitatorClient.settle(p, requirements)),
    )
    expect(settled.map((r) => r.errorReason ?? r.success)).toEqual(Array(6).fill(true))
    expect(new Set(settled.map((r) => r.transaction)).size).toBe(6)
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(before + 6000n)
  })
})
