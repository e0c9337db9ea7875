import { generateKeyPairSync } from 'node:crypto'
import type { SettleResponse } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { compactSettlement, createReceipts, type Delivery, parseSigningKey } from './index.js'

const ISS = 'https://tools.example'
const receipts = createReceipts({
  issuer: ISS,
  signingKey: parseSigningKey(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  ),
})
const delivery: Delivery = {
  iat: 1_700_000_000,
  resource: `${ISS}/mcp`,
  tool: 'hash',
  input_sha256: '1'.repeat(64),
  result_sha256: '2'.repeat(64),
  network: 'eip155:8453',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  amount: '1000',
  pay_to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  transaction: `0x${'3'.repeat(64)}`,
}
const settlement: SettleResponse = {
  success: true,
  transaction: delivery.transaction as string,
  network: 'eip155:8453',
  payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
  amount: '1000',
  extensions: { other: { info: 1 } },
}

describe('compactSettlement', () => {
  it('keeps success, payer, transaction, network and the delivery JWS with its digests', async () => {
    const full = await receipts.deliver(settlement, delivery)
    expect(Object.keys(full.extensions ?? {})).toEqual([
      'other',
      'offer-receipt',
      'delivery-receipt',
    ])
    const { receipt } = (full.extensions as Record<string, { info: { receipt: string } }>)[
      'delivery-receipt'
    ]?.info ?? { receipt: '' }
    const compact = compactSettlement(full)
    expect(compact).toEqual({
      success: true,
      payer: settlement.payer,
      transaction: delivery.transaction as string,
      network: 'eip155:8453',
      extensions: {
        'delivery-receipt': {
          info: { receipt, input_sha256: '1'.repeat(64), result_sha256: '2'.repeat(64) },
        },
      },
    })
    expect((await receipts.verify(receipt)).valid).toBe(true)
    expect(JSON.stringify(full).length - JSON.stringify(compact).length).toBeGreaterThan(1000)
  })

  it("keeps the scheme's extra: a batch-settlement payment's channel state, for the payer's client", () => {
    const extra = {
      chargedAmount: '1000',
      channelState: {
        channelId: `0x${'4'.repeat(64)}`,
        balance: '1000000',
        totalClaimed: '0',
        withdrawRequestedAt: 0,
        refundNonce: '0',
        chargedCumulativeAmount: '3000',
      },
    }
    expect(
      compactSettlement({ success: true, transaction: '', network: 'eip155:8453', extra }),
    ).toEqual({ success: true, transaction: '', network: 'eip155:8453', extra })
  })

  it('without a receipt or payer: the spec fields alone, errorReason kept', () => {
    expect(
      compactSettlement({
        success: false,
        errorReason: 'invalid_transaction_state',
        errorMessage: 'reverted',
        transaction: '',
        network: 'eip155:8453',
      }),
    ).toEqual({
      success: false,
      errorReason: 'invalid_transaction_state',
      transaction: '',
      network: 'eip155:8453',
    })
  })
})
