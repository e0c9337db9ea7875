import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type EvmDevnet, startEvmDevnet } from '../devnet/evm.js'
import { escrowReader } from './escrow.js'

// The start-up check of the prepaid channels against real chains: anvil with our escrow at the
// SDK's fixed addresses, and anvil without it.

let withEscrow: EvmDevnet
let without: EvmDevnet

beforeAll(async () => {
  ;[withEscrow, without] = await Promise.all([
    startEvmDevnet({ payers: 0 }),
    startEvmDevnet({ payers: 0, batchSettlement: false }),
  ])
}, 120_000)
afterAll(async () => {
  await withEscrow?.stop()
  await without?.stop()
})

describe('the escrow check', () => {
  it('passes where the escrow and the collector answer the specification channel id', async () => {
    expect(await escrowReader(withEscrow.rpcUrl, 'eip155:8453').check()).toEqual({ ok: true })
  })

  it('fails, saying why, where there is no code at the escrow address', async () => {
    expect(await escrowReader(without.rpcUrl, 'eip155:8453').check()).toEqual({
      ok: false,
      reason: 'no escrow code at 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003',
    })
  })

  it('fails where the RPC serves another chain than the rail', async () => {
    expect(await escrowReader(withEscrow.rpcUrl, 'eip155:84532').check()).toEqual({
      ok: false,
      reason: 'EVM_RPC_URL serves eip155:8453, not eip155:84532',
    })
  })

  it('fails without throwing, and without the URL, when the RPC is unreachable', async () => {
    const check = await escrowReader('http://127.0.0.1:9/rpc-key-secret', 'eip155:8453').check()
    expect(check.ok).toBe(false)
    expect(JSON.stringify(check)).not.toContain('secret')
  })

  it('tells which channels have a withdrawal started: none on a fresh chain', async () => {
    const id = `0x${'11'.repeat(32)}`
    expect(await escrowReader(withEscrow.rpcUrl, 'eip155:8453').withdrawing([id])).toEqual([])
  })
})
