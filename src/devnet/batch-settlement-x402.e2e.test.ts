import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import { decodePaymentResponseHeader, HTTPFacilitatorClient } from '@x402/core/http'
import { type FacilitatorClient, x402ResourceServer } from '@x402/core/server'
import type { SettleResponse } from '@x402/core/types'
import { toClientEvmSigner, toFacilitatorEvmSigner } from '@x402/evm'
import {
  BatchSettlementEvmScheme as BatchClientScheme,
  computeChannelId,
} from '@x402/evm/batch-settlement/client'
import { BatchSettlementEvmScheme as BatchFacilitatorScheme } from '@x402/evm/batch-settlement/facilitator'
import {
  BatchSettlementEvmScheme as BatchServerScheme,
  BatchSettlementChannelManager,
} from '@x402/evm/batch-settlement/server'
import { wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/hono'
import { Hono } from 'hono'
import {
  type Chain,
  createPublicClient,
  createWalletClient,
  decodeFunctionData,
  type Hex,
  http,
  publicActions,
  type TypedData,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { verifyTypedData } from 'viem/actions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevAccount, devAccount } from './anvil.js'
import { BATCH_SETTLEMENT_ESCROW, batchSettlementAbi } from './batch-settlement.js'
import { type EvmDevnet, startEvmDevnet } from './evm.js'
import { type FacilitatorServer, startFacilitatorServer } from './facilitator-server.js'
import { devStage } from './stage.js'

// The whole `batch-settlement` round on anvil with only official SDK pieces around our escrow:
// the @x402/core facilitator (over HTTP) with the SDK's facilitator scheme, a Hono resource
// server with @x402/hono and the SDK's server scheme, and a buyer with @x402/fetch and the SDK's
// client scheme. The facilitator holds the receiver-authorizer key (advertised in /supported).

const PRICE = 1000n
let devnet: EvmDevnet
let facilitatorServer: FacilitatorServer
let facilitator: x402Facilitator
let facilitatorClient: HTTPFacilitatorClient
let serverScheme: BatchServerScheme
let resourceServer: Server
let url: string
const authorizer = devAccount(9)

beforeAll(async () => {
  devnet = await startEvmDevnet({ payers: 2 })
  const { chain } = devStage('mainnet').evm

  facilitator = new x402Facilitator()
  facilitator.register(
    devnet.network,
    new BatchFacilitatorScheme(facilitatorSigner(chain), signerOf(authorizer)),
  )
  facilitatorServer = await startFacilitatorServer(facilitator)
  facilitatorClient = new HTTPFacilitatorClient({ url: facilitatorServer.url })

  serverScheme = new BatchServerScheme(devnet.payTo, { withdrawDelay: 900 })
  const server = new x402ResourceServer(facilitatorClient).register(devnet.network, serverScheme)
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        'GET /paid': {
          accepts: {
            scheme: 'batch-settlement',
            network: devnet.network,
            payTo: devnet.payTo,
            price: {
              amount: PRICE.toString(),
              asset: devnet.usdcAddress,
              extra: { ...devnet.usdcDomain },
            },
          },
        },
      },
      server,
    ),
  )
  app.get('/paid', (c) => c.json({ ok: true }))
  resourceServer = createServer(getRequestListener(app.fetch))
  await new Promise<void>((resolve) => resourceServer.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(resourceServer.address() as AddressInfo).port}/paid`
})

afterAll(async () => {
  await new Promise<void>((resolve) =>
    resourceServer ? resourceServer.close(() => resolve()) : resolve(),
  )
  await facilitatorServer?.stop()
  await devnet?.stop()
})

/** The facilitator's relayer (dev account 0), as src/devnet/evm-facilitator.ts builds it. */
function facilitatorSigner(chain: Chain) {
  const account = privateKeyToAccount(devnet.facilitatorPrivateKey)
  const client = createWalletClient({
    account,
    chain,
    transport: http(devnet.rpcUrl),
    pollingInterval: 50,
  }).extend(publicActions)
  return toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => client.getCode(args),
    readContract: (args) => client.readContract({ ...args, args: args.args ?? [] }),
    verifyTypedData: (args) =>
      verifyTypedData<Record<string, unknown>, string, Chain>(client, args),
    writeContract: (args) => client.writeContract({ ...args, args: args.args }),
    sendTransaction: (args) => client.sendTransaction(args),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  })
}

function signerOf(dev: DevAccount) {
  const account = privateKeyToAccount(dev.privateKey)
  return {
    address: account.address,
    signTypedData: (params: {
      domain: Record<string, unknown>
      types: TypedData
      primaryType: string
      message: Record<string, unknown>
    }) => account.signTypedData(params as Parameters<typeof account.signTypedData>[0]),
  }
}

/** A buyer with the SDK's client scheme (reading the escrow on recovery) behind @x402/fetch. */
function buyerOf(buyer: DevAccount) {
  const reader = createPublicClient({ transport: http(devnet.rpcUrl) })
  const scheme = new BatchClientScheme(
    toClientEvmSigner(privateKeyToAccount(buyer.privateKey), reader),
  )
  const paidFetch = wrapFetchWithPayment(
    fetch,
    new x402Client().register(devnet.network, scheme),
  ) as typeof fetch
  const channelId = computeChannelId(
    scheme.buildChannelConfig({
      scheme: 'batch-settlement',
      network: devnet.network,
      amount: PRICE.toString(),
      asset: devnet.usdcAddress,
      payTo: devnet.payTo,
      maxTimeoutSeconds: 300,
      extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900 },
    }),
    devnet.network,
  )
  return { scheme, paidFetch, channelId }
}

/** Makes `n` paid calls; returns each call's decoded PAYMENT-RESPONSE. */
async function pay(paidFetch: typeof fetch, n: number): Promise<SettleResponse[]> {
  const settles: SettleResponse[] = []
  for (let i = 0; i < n; i++) {
    const res = await paidFetch(url)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true })
    const header = res.headers.get('PAYMENT-RESPONSE')
    expect(header).toBeTruthy()
    settles.push(decodePaymentResponseHeader(header as string))
  }
  return settles
}

/**
 * The facilitator in process, for the channel manager: its claim and settle requests carry
 * `accepted.maxTimeoutSeconds: 0`, which @x402/core's own isPaymentPayload (and so our devnet
 * facilitator's HTTP front) refuses with a 400.
 */
function inProcessFacilitator(): FacilitatorClient {
  return {
    verify: (payload, reqs) => facilitator.verify(payload, reqs),
    settle: (payload, reqs) => facilitator.settle(payload, reqs),
    getSupported: () => facilitatorClient.getSupported(),
  }
}

function channelManager() {
  return new BatchSettlementChannelManager({
    scheme: serverScheme,
    facilitator: inProcessFacilitator(),
    receiver: devnet.payTo,
    token: devnet.usdcAddress,
    network: devnet.network,
  })
}

async function channelOnChain(id: Hex) {
  const reader = createPublicClient({ transport: http(devnet.rpcUrl) })
  const contract = { address: BATCH_SETTLEMENT_ESCROW, abi: batchSettlementAbi } as const
  const [[balance, totalClaimed], refundNonce] = await Promise.all([
    reader.readContract({ ...contract, functionName: 'channels', args: [id] }),
    reader.readContract({ ...contract, functionName: 'refundNonce', args: [id] }),
  ])
  return { balance, totalClaimed, refundNonce }
}

describe('batch-settlement with the official SDK on our escrow', () => {
  it('deposits, pays with vouchers, claims, settles and refunds the rest to the buyer', async () => {
    const buyer = devnet.payers[0] as DevAccount
    const { scheme: clientScheme, paidFetch, channelId } = buyerOf(buyer)
    const [buyerBefore, escrowBefore] = await Promise.all([
      devnet.usdcBalance(buyer.address),
      devnet.usdcBalance(BATCH_SETTLEMENT_ESCROW),
    ])

    // Three paid calls: the first deposits (ERC-3009 through our collector), all sign vouchers.
    const settles = await pay(paidFetch, 3)
    expect(settles.map((s) => s.success)).toEqual([true, true, true])
    // The server announces a minimum deposit of 10 prices (the SDK's default), which the client
    // deposits; each call charges the full price.
    const deposited = 10n * PRICE
    expect(settles[0]?.amount).toBe(deposited.toString())
    expect(settles.map((s) => s.extra?.chargedAmount)).toEqual(['1000', '1000', '1000'])
    const cumulative = (s: SettleResponse) =>
      (s.extra?.channelState as { chargedCumulativeAmount?: string } | undefined)
        ?.chargedCumulativeAmount
    expect(settles.map(cumulative)).toEqual(['1000', '2000', '3000'])
    expect(settles[0]?.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    expect(settles.slice(1).map((s) => s.transaction)).toEqual(['', ''])
    expect(await devnet.usdcBalance(buyer.address)).toBe(buyerBefore - deposited)
    expect(await devnet.usdcBalance(BATCH_SETTLEMENT_ESCROW)).toBe(escrowBefore + deposited)
    expect(await channelOnChain(channelId)).toEqual({
      balance: deposited,
      totalClaimed: 0n,
      refundNonce: 0n,
    })

    // The server claims its vouchers (the facilitator signs the ClaimBatch) and settles.
    const manager = channelManager()
    const payToBefore = await devnet.usdcBalance(devnet.payTo)
    const { claims, settle } = await manager.claimAndSettle()
    expect(claims.map((c) => c.vouchers)).toEqual([1])
    expect(settle?.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(payToBefore + 3n * PRICE)
    expect(await channelOnChain(channelId)).toEqual({
      balance: deposited,
      totalClaimed: 3n * PRICE,
      refundNonce: 0n,
    })

    // The buyer asks for its unclaimed rest back (refundWithSignature, signed by the facilitator).
    const refunded = await clientScheme.refund(url)
    expect(refunded).toMatchObject({ success: true, amount: (deposited - 3n * PRICE).toString() })
    expect(await devnet.usdcBalance(buyer.address)).toBe(buyerBefore - 3n * PRICE)
    expect(await devnet.usdcBalance(BATCH_SETTLEMENT_ESCROW)).toBe(escrowBefore)
    expect(await channelOnChain(channelId)).toEqual({
      balance: 3n * PRICE,
      totalClaimed: 3n * PRICE,
      refundNonce: 1n,
    })
  })

  it('claims the unclaimed vouchers and refunds in one multicall when the buyer leaves first', async () => {
    const buyer = devnet.payers[1] as DevAccount
    const { scheme: clientScheme, paidFetch, channelId } = buyerOf(buyer)
    const buyerBefore = await devnet.usdcBalance(buyer.address)
    await pay(paidFetch, 2)
    expect(await channelOnChain(channelId)).toEqual({
      balance: 10n * PRICE,
      totalClaimed: 0n,
      refundNonce: 0n,
    })

    // The server completes the refund with a claim of the two charged calls:
    // multicall([claimWithSignature, refundWithSignature]).
    const refunded = await clientScheme.refund(url)
    expect(refunded).toMatchObject({ success: true, amount: (8n * PRICE).toString() })
    const tx = await createPublicClient({ transport: http(devnet.rpcUrl) }).getTransaction({
      hash: refunded.transaction as Hex,
    })
    expect(decodeFunctionData({ abi: batchSettlementAbi, data: tx.input }).functionName).toBe(
      'multicall',
    )
    expect(await devnet.usdcBalance(buyer.address)).toBe(buyerBefore - 2n * PRICE)
    expect(await channelOnChain(channelId)).toEqual({
      balance: 2n * PRICE,
      totalClaimed: 2n * PRICE,
      refundNonce: 1n,
    })

    const payToBefore = await devnet.usdcBalance(devnet.payTo)
    const settled = await channelManager().settle()
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(payToBefore + 2n * PRICE)
  })
})
