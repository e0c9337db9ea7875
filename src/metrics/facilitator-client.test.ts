import type { FacilitatorClient } from '@x402/core/server'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { FacilitatorTimeoutError, SettleError, VerifyError } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { facilitatorHost, timedFacilitator } from './facilitator-client.js'
import type { FacilitatorSample } from './metrics.js'

const payload = {} as PaymentPayload
const requirements = {} as PaymentRequirements

/** A client whose answers a test scripts (a unit test of our own adapter). */
function scripted(answers: Partial<FacilitatorClient>): FacilitatorClient {
  const missing = () => Promise.reject(new Error('not scripted'))
  return { verify: missing, settle: missing, getSupported: missing, ...answers }
}

function timed(client: FacilitatorClient) {
  const samples: FacilitatorSample[] = []
  const wrapped = timedFacilitator(client, 'x402.example.com', (s) => samples.push(s))
  const seen = () => samples.map(({ operation, result }) => `${operation} ${result}`)
  return { wrapped, samples, seen }
}

describe('timedFacilitator', () => {
  it('passes answers through and reports success or a rejection by the verdict', async () => {
    const verdicts = [
      { isValid: true, payer: '0xP' },
      { isValid: false, invalidReason: 'insufficient_funds' },
    ]
    const { wrapped, samples, seen } = timed(
      scripted({
        verify: async () => verdicts.shift() as { isValid: boolean },
        settle: async () => ({
          success: false,
          errorReason: 'x',
          transaction: '',
          network: 'eip155:8453',
        }),
        getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
      }),
    )
    expect(await wrapped.verify(payload, requirements)).toEqual({ isValid: true, payer: '0xP' })
    expect((await wrapped.verify(payload, requirements)).isValid).toBe(false)
    expect((await wrapped.settle(payload, requirements)).success).toBe(false)
    expect(await wrapped.getSupported()).toEqual({ kinds: [], extensions: [], signers: {} })
    expect(seen()).toEqual([
      'verify success',
      'verify rejected',
      'settle rejected',
      'supported success',
    ])
    for (const s of samples) {
      expect(s.facilitator).toBe('x402.example.com')
      expect(s.seconds).toBeGreaterThanOrEqual(0)
    }
  })

  it('rethrows failures unchanged: a 4xx verdict is a rejection, a timeout a timeout, the rest errors', async () => {
    const errors = [
      new VerifyError(400, { isValid: false, invalidReason: 'invalid_payload' }),
      new VerifyError(502, { isValid: false, invalidReason: 'unexpected_verify_error' }),
      new FacilitatorTimeoutError('verify', 10_000),
      new TypeError('fetch failed'),
    ]
    const { wrapped, seen } = timed(
      scripted({
        verify: async () => {
          throw errors[seen().length]
        },
        settle: async () => {
          throw new SettleError(400, {
            success: false,
            errorReason: 'invalid_transaction_state',
            transaction: '',
            network: 'eip155:8453',
          })
        },
      }),
    )
    for (const error of errors) {
      await expect(wrapped.verify(payload, requirements)).rejects.toBe(error)
    }
    await expect(wrapped.settle(payload, requirements)).rejects.toBeInstanceOf(SettleError)
    expect(seen()).toEqual([
      'verify rejected',
      'verify error',
      'verify timeout',
      'verify error',
      'settle rejected',
    ])
  })
})

describe('facilitatorHost', () => {
  it('keeps the host and port only', () => {
    expect(facilitatorHost('https://user:pw@x402.example.com/v2/?key=1')).toBe('x402.example.com')
    expect(facilitatorHost('http://127.0.0.1:4020')).toBe('127.0.0.1:4020')
  })
})
