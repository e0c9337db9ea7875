import { x402ResourceServer } from '@x402/core/server'
import type { PaymentRequired, PaymentRequirements, ResourceInfo } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { BASE_REQUIREMENTS } from '../../test/helpers/requirements.js'
import type { LiveState } from '../facilitators/link.js'
import { hmacTool } from '../tools/hmac.js'
import { pipelineTool } from '../tools/pipeline/index.js'
import { createOffers, unpaidMessage } from './offer.js'

describe('unpaidMessage', () => {
  it('gives the price in USDC when the body passes or was not sent', () => {
    expect(unpaidMessage(hmacTool, undefined)).toBe('Payment required: /hmac costs 0.001 USDC')
    expect(unpaidMessage(pipelineTool, { valid: true, errors: [] })).toBe(
      'Payment required: /pipeline costs 0.003 USDC',
    )
    expect(unpaidMessage(hmacTool, { valid: null, errors: [], reason: 'busy' })).toBe(
      'Payment required: /hmac costs 0.001 USDC',
    )
  })

  it('leads with what is wrong with a refused body, at most five issues', () => {
    expect(
      unpaidMessage(hmacTool, {
        valid: false,
        errors: [
          { path: '/secret', message: 'Required (expected string)' },
          { path: '', message: 'Unrecognized key: "key"' },
        ],
      }),
    ).toBe(
      'Invalid body, fix it before paying: /secret Required (expected string); / Unrecognized key: "key". /hmac costs 0.001 USDC',
    )
    const seven = Array.from({ length: 7 }, (_, i) => ({ path: `/${i}`, message: 'bad' }))
    expect(unpaidMessage(hmacTool, { valid: false, errors: seven })).toBe(
      'Invalid body, fix it before paying: /0 bad; /1 bad; /2 bad; /3 bad; /4 bad (and 2 more). /hmac costs 0.001 USDC',
    )
  })
})

describe('createOffers', () => {
  it('builds the unpaid PaymentRequired again when the schemes offered change within one facilitator state', async () => {
    const exact = { scheme: 'exact', network: 'eip155:8453' } as unknown as PaymentRequirements
    const channel = {
      scheme: 'batch-settlement',
      network: 'eip155:8453',
    } as unknown as PaymentRequirements
    let accepts = [exact]
    let built = 0
    const state = {
      accepts: async () => accepts,
      server: {
        createPaymentRequiredResponse: async (requirements: PaymentRequirements[]) => {
          built++
          return { x402Version: 2, accepts: requirements } as PaymentRequired
        },
      },
    } as unknown as LiveState
    const call = {
      tool: hmacTool,
      transport: 'http' as const,
      resource: { url: 'https://tools.example/hmac' } as ResourceInfo,
    }
    const offerOf = createOffers()
    const schemes = async () =>
      (await (await offerOf(state, call)).unpaid()).accepts.map((a) => a.scheme)
    expect(await schemes()).toEqual(['exact'])
    expect(await schemes()).toEqual(['exact'])
    expect(built).toBe(1)
    // The escrow check passed later: the next 402 offers the channel, built once more.
    accepts = [exact, channel]
    expect(await schemes()).toEqual(['exact', 'batch-settlement'])
    expect(await schemes()).toEqual(['exact', 'batch-settlement'])
    expect(built).toBe(2)
  })

  it("keeps the tool's extension declarations as declared, though the SDK writes its enrichment into the object it is given", async () => {
    const server = new x402ResourceServer()
    let signed = 0
    server.registerExtension({
      key: 'offer-receipt',
      enrichPaymentRequiredResponse: async (declaration) => ({ signed: ++signed, declaration }),
    })
    const state = { accepts: async () => [BASE_REQUIREMENTS], server } as unknown as LiveState
    const declaration = { info: { receipt: { format: 'jws' } } }
    const receipts = {
      offerReceipt: { declaration: { 'offer-receipt': declaration } },
      offerEpoch: () => 0,
    } as unknown as Parameters<typeof createOffers>[0]
    const offerOf = createOffers(receipts)
    const call = {
      tool: hmacTool,
      transport: 'http' as const,
      resource: { url: 'https://tools.example/hmac' } as ResourceInfo,
      extensions: { bazaar: { info: {} } },
    }
    const first = await offerOf(state, call)
    const unpaid = await first.unpaid()
    const refused = await first.refusal('invalid_payment')
    // Each 402 carries its own enrichment of the declaration, never an enrichment of an enrichment.
    expect(unpaid.extensions?.['offer-receipt']).toEqual({ signed: 1, declaration })
    expect(refused.extensions?.['offer-receipt']).toEqual({ signed: 2, declaration })
    const second = await offerOf(state, call)
    expect(second.extensions).toBe(first.extensions)
    expect(second.extensions['offer-receipt']).toBe(declaration)
    expect(Object.keys(second.extensions)).toEqual([
      'bazaar',
      'payment-identifier',
      'offer-receipt',
    ])
  })
})
