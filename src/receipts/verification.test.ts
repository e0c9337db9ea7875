import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ToolDefinition } from '../tools/types.js'
import { createReceipts, type Delivery, parseSigningKey } from './index.js'
import { type CheckedGivenInput, createVerification } from './verification.js'

// The verdicts of POST /receipts/verify on a real signed receipt; the input check and the re-run
// (checker threads and tool workers in the service) are given as their answers.

const ISS = 'https://tools.example'
const key = parseSigningKey(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
)
const INPUT = '1'.repeat(64)
const RESULT = '2'.repeat(64)
const delivery: Delivery = {
  iat: 1_700_000_000,
  resource: `${ISS}/hash`,
  tool: 'hash',
  input_sha256: INPUT,
  result_sha256: RESULT,
  network: 'eip155:8453',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  amount: '1000',
  pay_to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  transaction: `0x${'3'.repeat(64)}`,
}
const hashTool = { id: 'hash' } as ToolDefinition
const receipts = createReceipts({ issuer: ISS, signingKey: key })
const verify = createVerification({ receipts, tools: [hashTool] })

/** An input check answering `digest`, whose re-run gives `rerun` and records its clock. */
function given(digest: string, rerun = RESULT) {
  const calls = { checked: [] as string[], reruns: [] as number[] }
  const input = async (tool: ToolDefinition): Promise<CheckedGivenInput> => {
    calls.checked.push(tool.id)
    return {
      status: 'ok',
      digest,
      rerun: async (iat) => {
        calls.reruns.push(iat)
        return rerun
      },
    }
  }
  return { input, calls }
}

describe('createVerification', () => {
  it('checks nothing else when the signature is not ours', async () => {
    const { input, calls } = given(INPUT)
    const answer = await verify({ receipt: 'not.a.jws', input, resultDigest: RESULT })
    expect(answer).toMatchObject({
      valid: false,
      reason: 'malformed',
      signature: { valid: false },
      checks: { input: 'not_checked', result: 'not_checked', recomputed: 'not_run' },
    })
    expect(calls.checked).toEqual([])
  })

  it('a signature alone is valid and asks for the input and result', async () => {
    const answer = await verify({ receipt: await receipts.deliveryReceipt(delivery) })
    expect(answer).toEqual({
      valid: true,
      message: `The receipt is signed by this service (key ${receipts.kid} (current)); give input and result to check them too.`,
      signature: { valid: true, kid: receipts.kid, key: 'current' },
      claims: { iss: ISS, ...delivery },
      checks: { input: 'not_given', result: 'not_given', recomputed: 'not_run' },
    })
  })

  it('re-runs the tool at the receipt iat only when the input digest matches', async () => {
    const receipt = await receipts.deliveryReceipt(delivery)
    const match = given(INPUT)
    const answer = await verify({ receipt, input: match.input, resultDigest: RESULT })
    expect(answer.valid).toBe(true)
    expect(answer.checks).toEqual({ input: 'match', result: 'match', recomputed: 'match' })
    expect(answer.message).toMatch(
      /; the input matches input_sha256, the result matches result_sha256, running hash again gives the same result\.$/,
    )
    expect(match.calls).toEqual({ checked: ['hash'], reruns: [1_700_000_000] })

    const other = given('9'.repeat(64))
    const mismatch = await verify({ receipt, input: other.input })
    expect(mismatch).toMatchObject({
      valid: false,
      reason: 'input_mismatch',
      checks: { input: 'mismatch', result: 'not_given', recomputed: 'not_run' },
    })
    expect(other.calls.reruns).toEqual([])
  })

  it('reports every failure, the first as the reason', async () => {
    const receipt = await receipts.deliveryReceipt(delivery)
    const drifted = given(INPUT, '8'.repeat(64))
    const answer = await verify({ receipt, input: drifted.input, resultDigest: '7'.repeat(64) })
    expect(answer).toMatchObject({
      valid: false,
      reason: 'result_mismatch',
      checks: { input: 'match', result: 'mismatch', recomputed: 'mismatch' },
    })
    expect(answer.message).toBe(
      `The receipt is signed by this service (key ${receipts.kid} (current)), but: The result's digest is not the receipt's result_sha256: this is not the result delivered; Running the tool again on the input does not give the receipt's result_sha256.`,
    )
  })

  it("gives the checker's issues for an input the tool refuses", async () => {
    const receipt = await receipts.deliveryReceipt(delivery)
    const issues = [{ path: '/algorithm', message: 'Invalid option' }]
    const answer = await verify({ receipt, input: async () => ({ status: 'invalid', issues }) })
    expect(answer).toMatchObject({
      valid: false,
      reason: 'input_invalid',
      checks: { input: 'invalid', recomputed: 'not_run' },
      input_errors: issues,
    })
  })

  it('leaves the input unchecked for a tool outside the catalogue', async () => {
    const receipt = await receipts.deliveryReceipt({ ...delivery, tool: 'retired-tool' })
    const { input, calls } = given(INPUT)
    const answer = await verify({ receipt, input })
    expect(answer.valid).toBe(true)
    expect(answer.checks.input).toBe('not_checked')
    expect(calls.checked).toEqual([])
  })
})
