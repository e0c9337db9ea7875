import { describe, expect, it } from 'vitest'
import { BASE_REQUIREMENTS, SOLANA_REQUIREMENTS } from '../../test/helpers/requirements.js'
import { createSettlementJudge } from './index.js'

// Which rail goes to which judge; the judges themselves read real chains in *.e2e.test.ts.
// No RPC is reached here: the URLs are never called.

const networks = [BASE_REQUIREMENTS.network, SOLANA_REQUIREMENTS.network]
const question = { network: 'eip155:8453', asset: '0x0', payTo: '0x0', amount: '1' }

describe('createSettlementJudge', () => {
  it('covers nothing without RPC URLs, and answers undecided', async () => {
    const judge = createSettlementJudge({ networks })
    expect(networks.map((n) => judge.covers(n))).toEqual([false, false])
    expect(await judge.judge(question)).toEqual({
      kind: 'undecided',
      why: 'no RPC configured for eip155:8453',
    })
  })

  it('covers each rail whose family has an RPC URL, and only the networks given', () => {
    const evmOnly = createSettlementJudge({ evmRpcUrl: 'http://127.0.0.1:1', networks })
    expect(networks.map((n) => evmOnly.covers(n))).toEqual([true, false])
    const solanaOnly = createSettlementJudge({ solanaRpcUrl: 'http://127.0.0.1:1', networks })
    expect(networks.map((n) => solanaOnly.covers(n))).toEqual([false, true])
    const both = createSettlementJudge({
      evmRpcUrl: 'http://127.0.0.1:1',
      solanaRpcUrl: 'http://127.0.0.1:1',
      networks,
    })
    expect(networks.map((n) => both.covers(n))).toEqual([true, true])
    expect(both.covers('eip155:84532')).toBe(false)
  })
})
