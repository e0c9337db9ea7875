import {
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Encoder,
  getTransactionDecoder,
  mainnet,
  signature,
} from '@solana/kit'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient } from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactSvmScheme } from '@x402/svm/exact/client'
import { ExactSvmScheme as ExactSvmServerScheme } from '@x402/svm/exact/server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFacilitatorServer } from '../facilitator-server.js'
import { registerDevSvmScheme } from './facilitator-scheme.js'
import { type SolanaDevnet, startSolanaDevnet, USDC_MINT } from './index.js'
import { createDevKeypair, type DevKeypair } from './keys.js'
import { usdcAta } from './usdc.js'

const NETWORK = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
const START_BALANCE = 100_000_000n

let devnet: SolanaDevnet
let facilitator: x402Facilitator
let requirements: PaymentRequirements

/** A PaymentPayload built by the official x402 client for `payer`, RPC pointed at the devnet. */
async function pay(payer: DevKeypair, accepted = requirements): Promise<PaymentPayload> {
  const signer = await createKeyPairSignerFromBytes(payer.secretKey)
  const client = new x402Client().register(
    NETWORK,
    new ExactSvmScheme(signer, { rpcUrl: devnet.rpcUrl }),
  )
  return client.createPaymentPayload({
    x402Version: 2,
    resource: {
      url: 'http://localhost/v1/tools/hash',
      description: 'hash',
      mimeType: 'application/json',
    },
    accepts: [accepted],
  })
}

/** RPC calls per method since the `before` snapshot of `devnet.methodCalls()`. */
function callsSince(before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(devnet.methodCalls())
      .map(([method, n]) => [method, n - (before[method] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  )
}

async function rpcCall(method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(devnet.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  })
  expect(response.status).toBe(200)
  return response.json()
}

beforeAll(async () => {
  devnet = await startSolanaDevnet()
  facilitator = new x402Facilitator()
  registerDevSvmScheme(facilitator, {
    rpcUrl: devnet.rpcUrl,
    feePayerSecretKey: devnet.feePayer.secretKey,
    network: devnet.network,
  })
  requirements = {
    scheme: 'exact',
    network: devnet.network,
    amount: '1000',
    asset: devnet.usdcMint,
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: devnet.feePayer.address },
  }
})

afterAll(async () => {
  await devnet?.stop()
})

describe('solana devnet', () => {
  it('starts with USDC at its mainnet address, funded payers and a funded fee payer', async () => {
    expect(devnet.network).toBe(NETWORK)
    expect(devnet.usdcMint).toBe('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')
    expect(devnet.usdcMint).toBe(USDC_MINT)
    expect(devnet.payers).toHaveLength(3)
    for (const payer of devnet.payers) {
      expect(await devnet.usdcBalance(payer.address)).toBe(START_BALANCE)
      expect(payer.secretKey).toHaveLength(64)
    }
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(0n)

    const rpc = createSolanaRpc(mainnet(devnet.rpcUrl))
    const feePayerBalance = await rpc.getBalance(devnet.feePayer.address).send()
    expect(feePayerBalance.value).toBe(10_000_000_000n)
    const mint = await rpc.getAccountInfo(USDC_MINT, { encoding: 'base64' }).send()
    expect(mint.value?.owner).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA')
    expect(mint.value?.space).toBe(82n)
    // Mint layout: decimals at byte 44, is_initialized at byte 45, supply (u64 LE) at 36.
    const data = Buffer.from(mint.value?.data[0] ?? '', 'base64')
    expect(data[44]).toBe(6)
    expect(data[45]).toBe(1)
    expect(data.readBigUInt64LE(36)).toBe(3n * START_BALANCE)
  })

  it('derives the same accounts from the same seed', async () => {
    const again = await createDevKeypair('default/fee-payer')
    expect(again.address).toBe(devnet.feePayer.address)
    expect(Buffer.from(again.secretKey)).toEqual(Buffer.from(devnet.feePayer.secretKey))
  })

  it('advertises the exact scheme with extra.feePayer in /supported', () => {
    const { kinds } = facilitator.getSupported()
    expect(kinds).toContainEqual({
      x402Version: 2,
      scheme: 'exact',
      network: NETWORK,
      extra: { feePayer: devnet.feePayer.address },
    })
  })

  it('verifies and settles a USDC payment, moving exactly the amount once', async () => {
    const [payer] = devnet.payers
    if (payer === undefined) throw new Error('no payer')
    const callsBefore = devnet.methodCalls()
    const payload = await pay(payer)
    const verified = await facilitator.verify(payload, requirements)
    expect(verified).toEqual({ isValid: true, invalidReason: undefined, payer: payer.address })
    const settled = await facilitator.settle(payload, requirements)
    // The RPC traffic of one payment: the client reads the mint and a blockhash; the facilitator
    // simulates at verify and again at settle, sends, then polls the status (landed at once).
    expect(callsSince(callsBefore)).toEqual({
      getAccountInfo: 1,
      getLatestBlockhash: 1,
      simulateTransaction: 2,
      sendTransaction: 1,
      getSignatureStatuses: 1,
    })

    expect(settled).toEqual({
      success: true,
      transaction: expect.any(String),
      network: NETWORK,
      payer: payer.address,
    })
    expect(getBase58Encoder().encode(settled.transaction)).toHaveLength(64)
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(1000n)
    expect(await devnet.usdcBalance(payer.address)).toBe(START_BALANCE - 1000n)

    const rpc = createSolanaRpc(mainnet(devnet.rpcUrl))
    const statuses = await rpc.getSignatureStatuses([signature(settled.transaction)]).send()
    expect(statuses.value[0]).toMatchObject({
      err: null,
      status: { Ok: null },
      confirmationStatus: 'finalized',
    })

    // The same facilitator refuses a replay from its settlement cache…
    const replay = await facilitator.settle(payload, requirements)
    expect(replay).toEqual({
      success: false,
      network: NETWORK,
      transaction: '',
      errorReason: 'duplicate_settlement',
      payer: payer.address,
    })
    // …but a second facilitator instance (its own empty cache) gets the RPC's "success", as on
    // Solana: the simulation passes (funds remain), the fee payer's signature comes out the same
    // (Ed25519 is deterministic), the network drops the duplicate, and the status is the first
    // landing's. Only the shared settlement cache stops a replay; the chain stops the transfer.
    const other = new x402Facilitator()
    registerDevSvmScheme(other, {
      rpcUrl: devnet.rpcUrl,
      feePayerSecretKey: devnet.feePayer.secretKey,
      network: devnet.network,
    })
    expect(await other.settle(payload, requirements)).toEqual({
      success: true,
      transaction: settled.transaction,
      network: NETWORK,
      payer: payer.address,
    })
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(1000n)
    expect(await devnet.usdcBalance(payer.address)).toBe(START_BALANCE - 1000n)
    // The ledger holds the one transfer, once: the duplicate was dropped, not landed again.
    expect(devnet.landedTransactions()).toEqual([{ signature: settled.transaction, ok: true }])
  })

  it('rejects an underfunded payer at verify with the simulation failure', async () => {
    const poor = await createDevKeypair('test/underfunded')
    await devnet.mint(poor.address, 999n)
    const payload = await pay(poor)
    const verified = await facilitator.verify(payload, requirements)
    // SPL Token's TransferChecked (instruction 2) fails with TokenError::InsufficientFunds = 1.
    expect(verified).toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_svm_transaction_simulation_failed',
      // The devnet sends JSON numbers; @solana/kit parses u64s as bigints, which the SDK's error
      // replacer then prints as strings.
      invalidMessage: 'Simulation failed: {"InstructionError":["2",{"Custom":"1"}]}',
      payer: poor.address,
    })
    expect(await devnet.usdcBalance(poor.address)).toBe(999n)
  })

  it('lets the resource-server scheme embed the devnet blockhash, sparing the client a call', async () => {
    const server = new ExactSvmServerScheme({ rpcUrl: devnet.rpcUrl })
    const [supportedKind] = facilitator.getSupported().kinds
    if (supportedKind === undefined) throw new Error('no supported kind')
    const callsBefore = devnet.methodCalls()
    const enhanced = await server.enhancePaymentRequirements(
      { ...requirements, extra: {} },
      { ...supportedKind, network: devnet.network },
      [],
    )
    expect(enhanced.extra).toEqual({
      feePayer: devnet.feePayer.address,
      recentBlockhash: devnet.svm.latestBlockhash(),
      lastValidBlockHeight: (devnet.svm.getClock().slot + 150n).toString(),
    })
    const [, , payer] = devnet.payers
    if (payer === undefined) throw new Error('no payer')
    const payload = await pay(payer, enhanced)
    expect(callsSince(callsBefore)).toEqual({ getLatestBlockhash: 1, getAccountInfo: 1 })
    expect(await facilitator.settle(payload, enhanced)).toMatchObject({ success: true })
    expect(await devnet.usdcBalance(payer.address)).toBe(START_BALANCE - 1000n)
  })

  it('settles through the HTTP facilitator server with HTTPFacilitatorClient', async () => {
    const server = await startFacilitatorServer(facilitator)
    try {
      const client = new HTTPFacilitatorClient({ url: server.url })
      const supported = await client.getSupported()
      expect(supported.kinds).toContainEqual({
        x402Version: 2,
        scheme: 'exact',
        network: NETWORK,
        extra: { feePayer: devnet.feePayer.address },
      })
      const [, payer] = devnet.payers
      if (payer === undefined) throw new Error('no payer')
      const before = await devnet.usdcBalance(devnet.payTo)
      const payload = await pay(payer)
      expect(await client.verify(payload, requirements)).toMatchObject({
        isValid: true,
        payer: payer.address,
      })
      const settled = await client.settle(payload, requirements)
      expect(settled).toMatchObject({ success: true, network: NETWORK, payer: payer.address })
      expect(getBase58Encoder().encode(settled.transaction)).toHaveLength(64)
      expect(await devnet.usdcBalance(devnet.payTo)).toBe(before + 1000n)
      expect(await devnet.usdcBalance(payer.address)).toBe(START_BALANCE - 1000n)
    } finally {
      await server.stop()
    }
  })

  // Last: it expires the blockhash every payment so far was signed with.
  it('serves getSignaturesForAddress, getTransaction and isBlockhashValid as Solana does', async () => {
    const payer = devnet.payers[2]
    if (payer === undefined) throw new Error('no payer')
    const payload = await pay(payer)
    const settled = await facilitator.settle(payload, requirements)
    expect(settled.success).toBe(true)
    const ata = await usdcAta(devnet.payTo)
    const rpc = createSolanaRpc(mainnet(devnet.rpcUrl))
    const id = signature(settled.transaction)

    // Newest first, bounded by `limit`, paged with `before`.
    const all = await rpc.getSignaturesForAddress(ata).send()
    expect(all[0]).toMatchObject({ signature: id, err: null, confirmationStatus: 'finalized' })
    expect(all.length).toBeGreaterThan(1)
    const [newest] = await rpc.getSignaturesForAddress(ata, { limit: 1 }).send()
    expect(newest?.signature).toBe(id)
    const next = await rpc.getSignaturesForAddress(ata, { limit: 1, before: id }).send()
    expect(next.map((e) => e.signature)).toEqual([all[1]?.signature])
    expect(await rpcCall('getSignaturesForAddress', [ata, { limit: 0 }])).toMatchObject({
      error: { code: -32602 },
    })
    expect(await rpcCall('getSignaturesForAddress', [ata, { limit: 1001 }])).toMatchObject({
      error: { code: -32602 },
    })

    // The wire transaction as sent, its first signature the id; v0 needs the client's consent.
    expect(await rpcCall('getTransaction', [id, { encoding: 'base64' }])).toMatchObject({
      error: { code: -32015 },
    })
    const tx = await rpc
      .getTransaction(id, { encoding: 'base64', maxSupportedTransactionVersion: 0 })
      .send()
    expect(tx?.meta?.err).toBeNull()
    expect(tx?.version).toBe(0n)
    const decoded = getTransactionDecoder().decode(
      getBase64Encoder().encode(tx?.transaction[0] ?? ''),
    )
    const [first] = Object.values(decoded.signatures)
    expect(getBase58Decoder().decode(first ?? new Uint8Array())).toBe(id)
    const unknown = signature(getBase58Decoder().decode(new Uint8Array(64).fill(9)))
    expect(await rpc.getTransaction(unknown, { encoding: 'base64' }).send()).toBeNull()

    // Only the latest blockhash is valid; expireBlockhash() replaces it.
    const blockhash = devnet.svm.latestBlockhash()
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(true)
    devnet.expireBlockhash()
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(false)
    expect((await rpc.isBlockhashValid(devnet.svm.latestBlockhash()).send()).value).toBe(true)
  })

  it('answers an unknown RPC method with -32601 Method not found', async () => {
    expect(await rpcCall('getBlockProduction')).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32601, message: 'Method not found' },
    })
  })
})
