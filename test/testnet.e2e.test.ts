import { x402Client, x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http'
import type { PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { catalog } from '../src/tools/catalog.js'
import type { ToolEnv } from '../src/tools/types.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// The testnet stage (X402_NETWORK=testnet) over real parts: anvil as Base Sepolia (chain id
// 84532, Circle's FiatToken named "USDC" at the Sepolia address), litesvm with the Solana devnet
// USDC mint, the official facilitator, and the official clients. A settled call on each rail
// proves the 402 carries the right network, asset and EIP-712 domain: the token computes its own
// domain separator from its name and chain id, so a wrong `extra.name` cannot verify.

const SEPOLIA = 'eip155:84532'
const SEPOLIA_USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'
const DEVNET_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const hash = catalog.find((t) => t.id === 'hash')
if (!hash) throw new Error('no hash tool')
const BODY = { input: 'abc' }
let dev: DevService

beforeAll(async () => {
  // The testnet stage as an operator's service shows it: without the local devnet's notice.
  dev = await startDevService({ payers: 2, clock, stage: 'testnet', env: { X402_DEVNET: 'off' } })
})
afterAll(() => dev?.stop())

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${dev.svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

async function payerBalance(rail: Rail): Promise<bigint> {
  const { stack } = dev
  if (rail === 'evm') return stack.evm.usdcBalance(stack.evm.payers[0]?.address ?? '0x')
  const payer = stack.solana.payers[0]
  if (!payer) throw new Error('no payer')
  return stack.solana.usdcBalance(payer.address)
}

describe('the testnet stage on the devnet', () => {
  it('runs the chains as Base Sepolia and Solana devnet', () => {
    expect(dev.stack.evm.chainId).toBe(84532)
    expect(dev.stack.evm.network).toBe(SEPOLIA)
    expect(dev.stack.evm.usdcAddress).toBe(SEPOLIA_USDC)
    expect(dev.stack.evm.usdcDomain).toEqual({ name: 'USDC', version: '2' })
    expect(dev.stack.solana.network).toBe(SOLANA_DEVNET)
    expect(dev.stack.solana.usdcMint).toBe(DEVNET_USDC)
  })

  it('offers Base Sepolia (EIP-712 "USDC", version "2") and Solana devnet in the 402', async () => {
    const res = await post(hash.path, BODY)
    expect(res.status).toBe(402)
    const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
    const feePayer = required.accepts[1]?.extra?.feePayer
    expect(typeof feePayer).toBe('string')
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: SEPOLIA,
        amount: hash.price,
        asset: SEPOLIA_USDC,
        payTo: dev.stack.evm.payTo,
        maxTimeoutSeconds: 120,
        extra: { name: 'USDC', version: '2' },
      },
      {
        scheme: 'exact',
        network: SOLANA_DEVNET,
        amount: hash.price,
        asset: DEVNET_USDC,
        payTo: dev.stack.solana.payTo,
        maxTimeoutSeconds: 120,
        extra: { feePayer },
      },
    ])
  })

  it.each(['evm', 'solana'] as const)(
    'settles a paid call on %s with the official client: payTo gains exactly the price',
    async (rail) => {
      const payTo = await payToBalance(dev.stack, rail)
      const payer = await payerBalance(rail)
      const pay = await paidFetch(payerKeys(dev.stack, rail), rail)
      const res = await pay(`${dev.svc.baseUrl}${hash.path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(BODY),
      })
      expect(res.status).toBe(200)
      expect(await json(res)).toEqual({
        ok: true,
        result: {
          algorithm: 'SHA-256',
          hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
          base64: 'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=',
          input_bytes: 3,
        },
      })
      const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
      expect(receipt.success).toBe(true)
      expect(receipt.network).toBe(rail === 'evm' ? SEPOLIA : SOLANA_DEVNET)
      expect(await payToBalance(dev.stack, rail)).toBe(payTo + BigInt(hash.price))
      expect(await payerBalance(rail)).toBe(payer - BigInt(hash.price))
    },
  )

  it('refuses a Base Sepolia payment signed for the mainnet domain ("USD Coin"): no transfer', async () => {
    const unpaid = await post(hash.path, BODY)
    const http = new x402HTTPClient(new x402Client())
    const required = http.getPaymentRequiredResponse((name) => unpaid.headers.get(name))
    const offered = required.accepts.find((a) => a.network === SEPOLIA) as PaymentRequirements
    // The official client signs the EIP-712 domain the offer names; name it as on Base mainnet.
    const key = dev.stack.evm.payers[1]?.privateKey
    if (!key) throw new Error('no payer')
    const mainnetNamed = { ...offered, extra: { ...offered.extra, name: 'USD Coin' } }
    const signer = new x402HTTPClient(
      new x402Client().register(SEPOLIA, new ExactEvmScheme(privateKeyToAccount(key))),
    )
    const payload = await signer.createPaymentPayload({ ...required, accepts: [mainnetNamed] })
    // Present it as a payment for the offer as made, so only the signature's domain differs.
    const header = signer.encodePaymentSignatureHeader({ ...payload, accepted: offered })

    const before = {
      payTo: await payToBalance(dev.stack, 'evm'),
      settle: dev.stack.facilitatorRequests.settle,
      verify: dev.stack.facilitatorRequests.verify,
    }
    const res = await post(hash.path, BODY, header)
    const reason = 'invalid_exact_evm_signature'
    expect(res.status).toBe(402)
    expect(await json(res)).toEqual({
      ok: false,
      request_id: res.headers.get('x-request-id'),
      error: `The facilitator rejected the payment: ${reason}`,
      code: 'payment_verification_failed',
    })
    expect(decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '').error).toBe(
      reason,
    )
    expect(dev.stack.facilitatorRequests.verify).toBe(before.verify + 1)
    expect(dev.stack.facilitatorRequests.settle).toBe(before.settle)
    expect(await payToBalance(dev.stack, 'evm')).toBe(before.payTo)
  })
})

describe('the discovery surfaces on the testnet stage', () => {
  const NOTE = '(test networks: faucet USDC, no value)'
  const summary = `${catalog.length} deterministic payload utilities (${catalog.map((t) => t.title).join(', ')}) for developers and AI agents, paid per call in USDC with x402 v2 on Base Sepolia and Solana devnet ${NOTE}.`
  const get = async (path: string) => {
    const res = await fetch(`${dev.svc.baseUrl}${path}`)
    expect(res.status, path).toBe(200)
    return res
  }
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON documents, asserted field by field
  const document = async (path: string): Promise<any> => (await get(path)).json()

  it('llms.txt names the test networks with their identifiers', async () => {
    const text = await (await get('/llms.txt')).text()
    expect(text).toContain(`> ${summary}\n`)
    expect(text).toContain(
      `(USDC on Base Sepolia \`${SEPOLIA}\` or Solana devnet \`${SOLANA_DEVNET}\` ${NOTE})`,
    )
    expect(text).not.toMatch(/eip155:8453\b|Solana mainnet/)
  })

  it('OpenAPI names them and prices every operation on them', async () => {
    const doc = await document('/openapi.json')
    expect(doc.info.summary).toBe(summary)
    expect(doc.info['x-guidance']).toContain(`USDC on Base Sepolia or Solana devnet ${NOTE})`)
    expect(doc.paths[hash.path].post['x-payment-info'].x402.accepts).toEqual([
      { network: SEPOLIA, asset: SEPOLIA_USDC, payTo: dev.stack.evm.payTo, amount: hash.price },
      {
        network: SOLANA_DEVNET,
        asset: DEVNET_USDC,
        payTo: dev.stack.solana.payTo,
        amount: hash.price,
      },
    ])
  })

  it('/capabilities lists the live rails as test networks', async () => {
    const body = await document('/capabilities')
    expect(body.description).toBe(summary)
    expect(body.x402.rails).toEqual([
      {
        network: SEPOLIA,
        name: 'Base Sepolia',
        testnet: true,
        asset: SEPOLIA_USDC,
        payTo: dev.stack.evm.payTo,
        // Without EVM_RPC_URL prepaid channels are not offered.
        schemes: ['exact'],
      },
      {
        network: SOLANA_DEVNET,
        name: 'Solana devnet',
        testnet: true,
        asset: DEVNET_USDC,
        payTo: dev.stack.solana.payTo,
        schemes: ['exact'],
      },
    ])
  })

  it('/.well-known/x402 names them', async () => {
    const body = await document('/.well-known/x402')
    expect(body.description).toBe(summary)
    expect(body.instructions).toContain(
      `one entry per rail: USDC on Base Sepolia or Solana devnet ${NOTE};`,
    )
  })

  it('the landing page carries a visible testnet banner and names the networks', async () => {
    const page = await (await get('/')).text()
    expect(page).toContain(
      '<title>Testnet · Payload Tools: payload utilities paid per call with x402</title>',
    )
    expect(page).toContain(
      '<p><strong class="stage-label">Testnet</strong> Payments here settle on Base Sepolia and Solana devnet: faucet USDC with no value, no real money.',
    )
    expect(page).toContain(
      '<p class="eyebrow">x402 v2 · USDC on Base Sepolia and Solana devnet</p>',
    )
    expect(page).toContain('<h4>Base Sepolia</h4>')
    expect(page).toContain('<h4>Solana devnet</h4>')
    expect(page).toContain(`client.register(&#39;${SEPOLIA}&#39;`)
  })

  it('the MCP endpoint names them in initialize and tools/list', async () => {
    const rpc = async (method: string, params: Record<string, unknown>) => {
      const res = await fetch(`${dev.svc.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      })
      expect(res.status).toBe(200)
      return ((await res.json()) as { result: Record<string, unknown> }).result
    }
    const init = await rpc('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'testnet-test', version: '1' },
    })
    expect(init.instructions).toContain(
      `${summary} initialize, ping and tools/list are free. Every tools/call is paid with x402 v2 (scheme exact, USDC on Base Sepolia or Solana devnet ${NOTE}):`,
    )
    const { tools } = (await rpc('tools/list', {})) as {
      tools: { name: string; description: string; _meta: Record<string, { networks: string[] }> }[]
    }
    const listed = tools.find((t) => t.name === hash.mcpName)
    expect(listed?.description).toContain(
      '(x402 v2, scheme exact, on Base Sepolia or Solana devnet)',
    )
    expect(listed?._meta['x402/price']?.networks).toEqual([SEPOLIA, SOLANA_DEVNET])
  })
})
