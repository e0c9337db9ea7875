import type { QuestionOf, SettlementJudge, SettlementVerdict } from '../../src/settlement/types.js'
import type { SettlementLedger } from '../../src/telemetry/ledger.js'
import { createSqliteCore } from '../../src/telemetry/sqlite-db.js'
import { fakeNonceOf } from './fakes.js'

/**
 * The settlement ledger of a fresh in-memory SQLite database, through the synchronous core the
 * store's worker thread runs (no thread in unit tests).
 */
export function sqliteLedger(): SettlementLedger {
  const core = createSqliteCore(':memory:')
  core.migrate(() => {})
  const l = core.ledger
  return {
    intend: async (i, hold) => l.intend(i, hold),
    decide: async (k, d) => l.decide(k, d),
    forget: async (k) => l.forget(k),
    claim: async (c) => l.claim(c),
    unresolved: async (b) => l.unresolved(b),
    get: async (k) => l.get(k),
    prune: async (b, n) => l.prune(b, n),
  }
}

/**
 * A scripted chain judge (our own interface): covers `networks`, answers each question with
 * `verdict(question)` (undecided by default), and keeps the questions asked.
 */
export function fakeJudge(
  networks: readonly string[],
  verdict: (question: Parameters<SettlementJudge['judge']>[0]) => SettlementVerdict = () => ({
    kind: 'undecided',
    why: 'scripted',
  }),
) {
  const asked: Parameters<SettlementJudge['judge']>[0][] = []
  const judge: SettlementJudge = {
    covers: (network) => networks.includes(network),
    async judge(question) {
      asked.push(question)
      return verdict(question)
    },
  }
  return { judge, asked }
}

/**
 * The question of a fake payment: its rail and, for EVM, its nonce label in `evm.nonce` (hex of
 * the label, so a scripted judge can tell payments apart) with a validBefore in 2100.
 */
export const fakeQuestionOf: QuestionOf = (payment, requirements) => ({
  network: requirements.network,
  asset: requirements.asset,
  payTo: requirements.payTo,
  amount: requirements.amount,
  evm: {
    nonce: `0x${Buffer.from(fakeNonceOf(payment) ?? '').toString('hex')}`,
    validBefore: 4_102_444_800,
  },
})

/** The nonce label a {@link fakeQuestionOf} question carries. */
export function labelOf(question: { evm?: { nonce: string } }): string {
  return Buffer.from(question.evm?.nonce.slice(2) ?? '', 'hex').toString()
}
