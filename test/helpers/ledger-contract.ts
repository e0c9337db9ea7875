import { describe, expect, it } from 'vitest'
import type { LedgerIntent, SettlementLedger } from '../../src/telemetry/ledger.js'

const T0 = Date.UTC(2026, 10, 27, 12, 0)
const BASE = 'eip155:8453'
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

/** An intent on Base at T0 + `offset` ms, valid for 120 s. */
function intent(key: string, offset = 0, network = BASE): LedgerIntent {
  return {
    key,
    network,
    amount: '1000',
    tool: 'hash',
    transport: 'http',
    createdAt: T0 + offset,
    expiresAt: T0 + offset + 120_000,
    question: JSON.stringify({ network, asset: '0xa', payTo: '0xb', amount: '1000' }),
  }
}

/**
 * What every backend of the settlement ledger must do; `open` gives a fresh, migrated ledger.
 *
 * @param name - the backend, in the test names
 */
export function ledgerContract(name: string, open: () => Promise<SettlementLedger>): void {
  describe(`settlement ledger (${name})`, () => {
    it('keeps an intent in doubt until its outcome, which is written once', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:a'), T0 + 60_000)
      expect(await ledger.get('pay:a')).toMatchObject({
        key: 'pay:a',
        amount: '1000',
        createdAt: T0,
        outcome: null,
        transaction: null,
        decidedAt: null,
      })
      expect(
        await ledger.decide('pay:a', { outcome: 'landed', transaction: '0xt', at: T0 + 5 }),
      ).toBe(true)
      // A second decider (the resolver after the payer's retry) loses: counted once.
      expect(
        await ledger.decide('pay:a', { outcome: 'settled', transaction: '0xu', at: T0 + 6 }),
      ).toBe(false)
      expect(await ledger.decide('pay:none', { outcome: 'failed', at: T0 })).toBe(false)
      expect(await ledger.get('pay:a')).toMatchObject({
        outcome: 'landed',
        transaction: '0xt',
        decidedAt: T0 + 5,
      })
      // Written again once decided: left alone.
      await ledger.intend(intent('pay:a', 1000), T0 + 60_000)
      expect((await ledger.get('pay:a'))?.outcome).toBe('landed')
    })

    it('holds a retried intent again without moving its creation time; restarts a not_landed one', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:r'), T0 + 10)
      await ledger.intend(
        { ...intent('pay:r', 5_000), question: '{"network":"eip155:8453","presentedAt":5}' },
        T0 + 90_000,
      )
      expect(await ledger.get('pay:r')).toMatchObject({
        createdAt: T0,
        question: intent('pay:r').question,
      })
      expect(
        await ledger.claim({ now: T0 + 60_000, holdMs: 1000, networks: [BASE], limit: 10 }),
      ).toEqual([])
      await ledger.decide('pay:r', { outcome: 'not_landed', at: T0 + 100_000 })
      await ledger.intend(intent('pay:r', 200_000), T0 + 200_000)
      expect(await ledger.get('pay:r')).toMatchObject({ outcome: null, createdAt: T0 + 200_000 })
    })

    it('forgets an intent in doubt only', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:f'), T0)
      await ledger.forget('pay:f')
      expect(await ledger.get('pay:f')).toBeUndefined()
      await ledger.intend(intent('pay:g'), T0)
      await ledger.decide('pay:g', { outcome: 'failed', at: T0 })
      await ledger.forget('pay:g')
      expect((await ledger.get('pay:g'))?.outcome).toBe('failed')
    })

    it('claims free intents in doubt of the networks asked, oldest first, each to one claimer', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:1', 0), T0 + 1_000)
      await ledger.intend(intent('pay:2', 1), T0 + 1_000)
      await ledger.intend(intent('pay:3', 2), T0 + 100_000) // still held by its call
      await ledger.intend(intent('pay:s', 3, SOLANA), T0 + 1_000)
      await ledger.intend(intent('pay:d', 4), T0 + 1_000)
      await ledger.decide('pay:d', { outcome: 'settled', transaction: '0x1', at: T0 })
      const now = T0 + 10_000
      const both = await Promise.all([
        ledger.claim({ now, holdMs: 30_000, networks: [BASE], limit: 10 }),
        ledger.claim({ now, holdMs: 30_000, networks: [BASE], limit: 10 }),
      ])
      const keys = both.flat().map((e) => e.key)
      expect(keys.sort()).toEqual(['pay:1', 'pay:2'])
      // Held for 30 s: nobody gets them again before.
      expect(
        await ledger.claim({ now: now + 29_999, holdMs: 1, networks: [BASE], limit: 10 }),
      ).toEqual([])
      const again = await ledger.claim({ now: now + 30_000, holdMs: 1, networks: [BASE], limit: 1 })
      expect(again.map((e) => e.key)).toEqual(['pay:1'])
      expect(again[0]).toMatchObject({
        network: BASE,
        amount: '1000',
        tool: 'hash',
        transport: 'http',
      })
      const solana = await ledger.claim({ now, holdMs: 1, networks: [SOLANA], limit: 10 })
      expect(solana.map((e) => e.key)).toEqual(['pay:s'])
    })

    it('prunes decided intents decided before a time, never one in doubt', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:p1'), T0)
      await ledger.intend(intent('pay:p2'), T0)
      await ledger.intend(intent('pay:p3'), T0)
      await ledger.intend(intent('pay:p4'), T0)
      await ledger.decide('pay:p1', { outcome: 'settled', transaction: '0x1', at: T0 + 10 })
      await ledger.decide('pay:p2', { outcome: 'not_landed', at: T0 + 20 })
      await ledger.decide('pay:p3', { outcome: 'failed', at: T0 + 90 })
      expect(await ledger.prune(T0 + 50, 1)).toBe(1)
      expect(await ledger.prune(T0 + 50, 10)).toBe(1)
      expect(await ledger.prune(T0 + 50, 10)).toBe(0)
      expect((await ledger.get('pay:p3'))?.outcome).toBe('failed')
      expect((await ledger.get('pay:p4'))?.outcome).toBeNull()
      expect(await ledger.get('pay:p1')).toBeUndefined()
    })

    it('counts the intents in doubt older than a time', async () => {
      const ledger = await open()
      await ledger.intend(intent('pay:o1', 0), T0)
      await ledger.intend(intent('pay:o2', 60_000), T0)
      await ledger.intend(intent('pay:o3', 0), T0)
      await ledger.decide('pay:o3', { outcome: 'failed', at: T0 })
      expect(await ledger.unresolved(T0 + 1)).toBe(1)
      expect(await ledger.unresolved(T0 + 60_001)).toBe(2)
    })
  })
}
