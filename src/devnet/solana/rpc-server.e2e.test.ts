import {
  appendTransactionMessageInstructions,
  type Blockhash,
  createKeyPairSignerFromBytes,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { getTransferCheckedInstruction } from '@solana-program/token'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SolanaDevnet, startSolanaDevnet, USDC_DECIMALS, USDC_MINT } from './index.js'
import { usdcAta } from './usdc.js'

let devnet: SolanaDevnet

beforeAll(async () => {
  devnet = await startSolanaDevnet({ payers: 2, seed: 'rpc-server-test' })
})

afterAll(async () => {
  await devnet?.stop()
})

async function postRaw(body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(devnet.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  })
  return { status: response.status, text: await response.text() }
}

async function post(body: string): Promise<{ status: number; json: unknown }> {
  const { status, text } = await postRaw(body)
  return { status, json: text === '' ? undefined : JSON.parse(text) }
}

async function call(method: string, params: unknown[] = []): Promise<unknown> {
  const { status, json } = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))
  expect(status).toBe(200)
  return json
}

/**
 * A USDC TransferChecked from payer `index` to payTo, fee paid by the devnet fee payer; fully
 * signed unless `partial`, whose fee-payer signature slot then stays empty as in an x402 payload.
 */
async function transfer(index: number, amount: bigint, partial = false) {
  const payer = devnet.payers[index]
  if (payer === undefined) throw new Error(`no payer ${index}`)
  const [authority, feePayer] = await Promise.all([
    createKeyPairSignerFromBytes(payer.secretKey),
    createKeyPairSignerFromBytes(devnet.feePayer.secretKey),
  ])
  const instruction = getTransferCheckedInstruction({
    source: await usdcAta(payer.address),
    mint: USDC_MINT,
    destination: await usdcAta(devnet.payTo),
    authority,
    amount,
    decimals: USDC_DECIMALS,
  })
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: devnet.svm.latestBlockhash() as Blockhash, lastValidBlockHeight: 0n },
        m,
      ),
    (m) => appendTransactionMessageInstructions([instruction], m),
  )
  if (partial) {
    const tx = await partiallySignTransactionMessageWithSigners(
      setTransactionMessageFeePayer(feePayer.address, message),
    )
    return { wire: getBase64EncodedWireTransaction(tx), signature: '' }
  }
  const tx = await signTransactionMessageWithSigners(
    setTransactionMessageFeePayerSigner(feePayer, message),
  )
  return { wire: getBase64EncodedWireTransaction(tx), signature: getSignatureFromTransaction(tx) }
}

describe('solana devnet JSON-RPC envelope', () => {
  it('answers malformed JSON with -32700 and a non-object with -32600', async () => {
    expect(await post('{nope')).toEqual({
      status: 200,
      json: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
    })
    expect(await post('42')).toEqual({
      status: 200,
      json: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } },
    })
  })

  it('answers a batch in order and sends nothing for a notification', async () => {
    const batch = await post(
      JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'getLatestBlockhash' },
        { jsonrpc: '2.0', id: 'b', method: 'getHealth' },
      ]),
    )
    expect(batch.json).toEqual([
      {
        jsonrpc: '2.0',
        id: 'a',
        result: {
          context: { slot: Number(devnet.svm.getClock().slot) },
          value: {
            blockhash: devnet.svm.latestBlockhash(),
            lastValidBlockHeight: Number(devnet.svm.getClock().slot + 150n),
          },
        },
      },
      { jsonrpc: '2.0', id: 'b', error: { code: -32601, message: 'Method not found' } },
    ])
    expect(await post(JSON.stringify({ jsonrpc: '2.0', method: 'getLatestBlockhash' }))).toEqual({
      status: 204,
      json: undefined,
    })
  })
})

describe('solana devnet accounts', () => {
  it('serves an account in base64 with u64 fields as JSON numbers', async () => {
    const ata = await usdcAta(devnet.payTo)
    const { text } = await postRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'getAccountInfo',
        params: [ata, { encoding: 'base64' }],
      }),
    )
    const slot = devnet.svm.getClock().slot
    // u64::MAX must come through as written, not rounded by a double.
    expect(text).toBe(
      `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":${slot}},"value":{"data":["${text.match(/"data":\["([^"]+)"/)?.[1]}","base64"],"executable":false,"lamports":2039280,"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","rentEpoch":18446744073709551615,"space":165}}}`,
    )
    const missing = await call('getAccountInfo', [
      '11111111111111111111111111111112',
      { encoding: 'base64' },
    ])
    expect(missing).toMatchObject({ result: { value: null } })
    expect(await call('getAccountInfo', [ata, { encoding: 'jsonParsed' }])).toMatchObject({
      error: { code: -32602 },
    })
  })

  it('reports a token balance the Solana way', async () => {
    const payer = devnet.payers[0]
    if (payer === undefined) throw new Error('no payer')
    expect(await call('getTokenAccountBalance', [await usdcAta(payer.address)])).toMatchObject({
      result: {
        value: {
          amount: '100000000',
          decimals: 6,
          uiAmount: 100,
          uiAmountString: '100',
        },
      },
    })
  })
})

describe('solana devnet transactions', () => {
  it('lands a sent transaction, reports it finalized, and refuses it again at preflight', async () => {
    const before = await devnet.usdcBalance(devnet.payTo)
    const { wire, signature } = await transfer(0, 250n)
    expect(await call('sendTransaction', [wire, { encoding: 'base64' }])).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: signature,
    })
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(before + 250n)
    expect(await call('getSignatureStatuses', [[signature, '1'.repeat(64)]])).toMatchObject({
      result: {
        value: [
          { err: null, status: { Ok: null }, confirmationStatus: 'finalized', confirmations: null },
          null,
        ],
      },
    })

    expect(await call('sendTransaction', [wire, { encoding: 'base64' }])).toMatchObject({
      error: {
        code: -32002,
        message: 'Transaction simulation failed: This transaction has already been processed',
        data: { err: 'AlreadyProcessed' },
      },
    })
    // Without preflight the duplicate is accepted and dropped, as on Solana: no second transfer.
    expect(
      await call('sendTransaction', [wire, { encoding: 'base64', skipPreflight: true }]),
    ).toMatchObject({ result: signature })
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(before + 250n)
  })

  it('rejects an overdraft at preflight, and lands it as failed without preflight', async () => {
    const payer = devnet.payers[1]
    if (payer === undefined) throw new Error('no payer')
    const { wire, signature } = await transfer(1, 200_000_000n)
    expect(await call('sendTransaction', [wire, { encoding: 'base64' }])).toMatchObject({
      error: {
        code: -32002,
        message:
          'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1',
        data: { err: { InstructionError: [0, { Custom: 1 }] } },
      },
    })
    expect(await call('getSignatureStatuses', [[signature]])).toMatchObject({
      result: { value: [null] },
    })

    const feePayerBefore = devnet.svm.getBalance(devnet.feePayer.address)
    expect(
      await call('sendTransaction', [wire, { encoding: 'base64', skipPreflight: true }]),
    ).toMatchObject({ result: signature })
    expect(await call('getSignatureStatuses', [[signature]])).toMatchObject({
      result: {
        value: [
          {
            err: { InstructionError: [0, { Custom: 1 }] },
            status: { Err: { InstructionError: [0, { Custom: 1 }] } },
            confirmationStatus: 'finalized',
          },
        ],
      },
    })
    // A failed transaction that lands still pays its fee: 5,000 lamports for each of 2 signatures.
    expect(devnet.svm.getBalance(devnet.feePayer.address)).toBe((feePayerBefore ?? 0n) - 10_000n)
    expect(await devnet.usdcBalance(payer.address)).toBe(100_000_000n)
  })

  it('simulates a partially signed transaction only with sigVerify off', async () => {
    const before = await devnet.usdcBalance(devnet.payTo)
    const { wire } = await transfer(1, 1_000n, true)
    expect(await call('simulateTransaction', [wire, { encoding: 'base64' }])).toMatchObject({
      result: { value: { err: null, replacementBlockhash: null, accounts: null } },
    })
    expect(
      await call('simulateTransaction', [wire, { encoding: 'base64', sigVerify: true }]),
    ).toMatchObject({
      error: { code: -32003, message: 'Transaction signature verification failure' },
    })
    expect(
      await call('simulateTransaction', [
        wire,
        { encoding: 'base64', replaceRecentBlockhash: true },
      ]),
    ).toMatchObject({
      result: {
        value: {
          err: null,
          replacementBlockhash: {
            blockhash: devnet.svm.latestBlockhash(),
            lastValidBlockHeight: Number(devnet.svm.getClock().slot + 150n),
          },
        },
      },
    })
    expect(
      await call('simulateTransaction', [
        wire,
        { encoding: 'base64', sigVerify: true, replaceRecentBlockhash: true },
      ]),
    ).toMatchObject({ error: { code: -32602 } })
    expect(await devnet.usdcBalance(devnet.payTo)).toBe(before)
  })
})
