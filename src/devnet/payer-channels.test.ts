import { InMemoryClientChannelStorage } from '@x402/evm/batch-settlement/client'
import { describe, expect, it } from 'vitest'
import { ChainCheckedStorage } from './payer-channels.js'

// The channel records of `npm run pay`, checked against the escrow once per process (the escrow's
// deposit is given here; on the devnet: test/pay-channels.e2e.test.ts).

const ID = `0x${'ab'.repeat(32)}`

async function storageWith(
  record: { balance?: string; chargedCumulativeAmount: string },
  deposited: bigint,
) {
  const inner = new InMemoryClientChannelStorage()
  await inner.set(ID, record)
  const reads: string[] = []
  const storage = new ChainCheckedStorage(inner, async (id) => {
    reads.push(id)
    return deposited
  })
  return { inner, storage, reads }
}

describe('ChainCheckedStorage', () => {
  it('keeps a record whose deposit the escrow holds, reading the chain once per channel', async () => {
    const record = { balance: '1000000', chargedCumulativeAmount: '5000' }
    const { storage, reads } = await storageWith(record, 1_000_000n)
    expect(await storage.get(ID)).toEqual(record)
    expect(await storage.get(ID)).toEqual(record)
    expect(reads).toEqual([ID])
  })

  it.each([
    ['a deposit the escrow never saw (a reset devnet)', 0n],
    ['a deposit the escrow refunded (an idle refund)', 6000n],
    ['less than the escrow holds (a deposit made by another process)', 2_000_000n],
  ])('drops a record of %s, so that the SDK rebuilds it from the chain', async (_, deposited) => {
    const { inner, storage } = await storageWith(
      { balance: '1000000', chargedCumulativeAmount: '6000' },
      deposited,
    )
    expect(await storage.get(ID)).toBeUndefined()
    expect(await inner.get(ID)).toBeUndefined()
  })

  it('drops a record without a deposit amount', async () => {
    const { storage } = await storageWith({ chargedCumulativeAmount: '1000' }, 1_000_000n)
    expect(await storage.get(ID)).toBeUndefined()
  })

  it('trusts what it wrote itself in this process, and reads nothing for an absent record', async () => {
    const inner = new InMemoryClientChannelStorage()
    const reads: string[] = []
    const storage = new ChainCheckedStorage(inner, async (id) => {
      reads.push(id)
      return 0n
    })
    expect(await storage.get(ID)).toBeUndefined()
    await storage.set(ID, { balance: '1000000', chargedCumulativeAmount: '1000' })
    expect(await storage.get(ID)).toEqual({ balance: '1000000', chargedCumulativeAmount: '1000' })
    await storage.delete(ID)
    expect(await storage.get(ID)).toBeUndefined()
    expect(reads).toEqual([])
  })
})
