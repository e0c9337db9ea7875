import { describe, expect, it } from 'vitest'
import type { EventRow, LedgerDecisionWrite } from './types.js'
import { createWriteQueue, WriteTimeoutError } from './write-queue.js'

const row = (n: number): EventRow => ({
  id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
  at: n,
  tool: 'hash',
  transport: 'http',
  network: 'eip155:8453',
  amount: '1000',
  outcome: 'settled',
  payerKey: null,
})

/** A fake transaction log: each `write` waits for the test to commit or fail it. */
function fakeStore() {
  const writes: {
    rows: number[]
    decided: string[]
    commit: () => void
    fail: (e: Error) => void
  }[] = []
  const write = (rows: readonly EventRow[], decisions: readonly LedgerDecisionWrite[]) =>
    new Promise<void>((resolve, reject) => {
      writes.push({
        rows: rows.map((r) => r.at),
        decided: decisions.map((d) => d.key),
        commit: resolve,
        fail: reject,
      })
    })
  return { writes, write }
}

/** The end of the current turn: the queue has sent what its callers wrote in it. */
const turn = () => new Promise((resolve) => setImmediate(resolve))

const decision = (key: string): LedgerDecisionWrite => ({
  key,
  decision: { outcome: 'settled', transaction: '0xabc', at: 1 },
})

/** Lets pending commits release their callers and the queue start its next transaction. */
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('createWriteQueue (group commit)', () => {
  it('merges the calls of one turn into one transaction, with the ledger outcomes they carry', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 1_000, maxBatchRows: 100 })
    const both = [insert([row(1)]), insert([row(2)], [decision('pay:a')])]
    // Nothing is sent before the turn ends.
    expect(store.writes).toEqual([])
    await turn()
    expect(store.writes.map((w) => [w.rows, w.decided])).toEqual([[[1, 2], ['pay:a']]])
    store.writes[0]?.commit()
    await Promise.all(both)
  })

  it('merges the calls that arrive during a transaction into the next one', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 1_000, maxBatchRows: 100 })
    const done: number[] = []
    const first = insert([row(1)]).then(() => done.push(1))
    await turn()
    const rest = [2, 3, 4].map((n) => insert([row(n)]).then(() => done.push(n)))
    await turn()
    expect(store.writes.map((w) => w.rows)).toEqual([[1]])
    store.writes[0]?.commit()
    await first
    // Only the first caller is released by the first commit.
    expect(done).toEqual([1])
    await settle()
    expect(store.writes.map((w) => w.rows)).toEqual([[1], [2, 3, 4]])
    store.writes[1]?.commit()
    await Promise.all(rest)
    expect(done).toEqual([1, 2, 3, 4])
  })

  it('gives every caller of a failed transaction its error', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 1_000, maxBatchRows: 100 })
    const a = insert([row(1)])
    await turn()
    store.writes[0]?.commit()
    await a
    const b = insert([row(2)])
    const c = insert([row(3)])
    await settle()
    const failure = new Error('disk full')
    store.writes[1]?.fail(failure)
    await expect(b).rejects.toBe(failure)
    await expect(c).rejects.toBe(failure)
  })

  it('caps a merged transaction at maxBatchRows but never splits one call', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 1_000, maxBatchRows: 3 })
    const calls = [
      insert([row(1)]),
      insert([row(2), row(3)]),
      insert([row(4), row(5)]),
      insert([row(6), row(7), row(8), row(9)]),
    ]
    await turn()
    for (let i = 0; i < 4; i++) {
      store.writes[i]?.commit()
      await settle()
    }
    await Promise.all(calls)
    // The first three fill one transaction of 3 rows at most; the last goes alone, whole.
    expect(store.writes.map((w) => w.rows)).toEqual([
      [1, 2, 3],
      [4, 5],
      [6, 7, 8, 9],
    ])
  })

  it('runs up to `concurrency` transactions at once', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, {
      timeoutMs: 1_000,
      maxBatchRows: 100,
      concurrency: 2,
    })
    const calls = [insert([row(1)])]
    await turn()
    calls.push(insert([row(2)]))
    await turn()
    calls.push(insert([row(3)]), insert([row(4)]))
    await turn()
    expect(store.writes.map((w) => w.rows)).toEqual([[1], [2]])
    store.writes[1]?.commit()
    await settle()
    expect(store.writes.map((w) => w.rows)).toEqual([[1], [2], [3, 4]])
    store.writes[0]?.commit()
    store.writes[2]?.commit()
    await Promise.all(calls)
  })

  it('withdraws rows still queued at the timeout and fails their caller', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 50, maxBatchRows: 100 })
    const stuck = insert([row(1)])
    await turn()
    const queued = insert([row(2)])
    const [a, b] = await Promise.allSettled([stuck, queued])
    expect(a.status === 'rejected' && a.reason).toBeInstanceOf(WriteTimeoutError)
    expect(b.status === 'rejected' && String(b.reason)).toBe(
      'WriteTimeoutError: telemetry write not committed within 50 ms',
    )
    // The stuck transaction commits late; the withdrawn row is never sent.
    store.writes[0]?.commit()
    await settle()
    expect(store.writes.map((w) => w.rows)).toEqual([[1]])
  })

  it('resolves an empty call at once without a transaction', async () => {
    const store = fakeStore()
    const insert = createWriteQueue(store.write, { timeoutMs: 50, maxBatchRows: 100 })
    await insert([])
    expect(store.writes).toEqual([])
  })
})
