import { createEvmJudge } from './evm.js'
import { createSolanaJudge } from './solana.js'
import type { SettlementJudge } from './types.js'

export { questionOf } from './question.js'
export type {
  QuestionOf,
  SettlementJudge,
  SettlementQuestion,
  SettlementVerdict,
} from './types.js'

/** Options of {@link createSettlementJudge}. */
export interface SettlementJudgeOptions {
  /** EVM_RPC_URL: the Base rail's chain; without it, no `eip155:*` network is covered. */
  evmRpcUrl?: string | undefined
  /** SOLANA_RPC_URL: the Solana rail's cluster; without it, no `solana:*` network is covered. */
  solanaRpcUrl?: string | undefined
  /** The rails' CAIP-2 networks (e.g. `eip155:8453`, `solana:5eykt…`), told apart by prefix. */
  networks: readonly string[]
  /** The service's keyed hash of a payer address: EVM logs count only for the question's payer. */
  payerKey?: (address: string) => string
}

/**
 * The judge of the service's rails: each network goes to the judge of its family (`eip155:` →
 * {@link createEvmJudge}, `solana:` → {@link createSolanaJudge}) when that family's RPC URL is set.
 * With neither URL it covers nothing, and every question is `undecided`.
 *
 * @example
 * const judge = createSettlementJudge({
 *   evmRpcUrl: config.evmRpcUrl,
 *   solanaRpcUrl: config.solanaRpcUrl,
 *   networks: ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'],
 * })
 * if (judge.covers(question.network)) verdict = await judge.judge(question)
 */
export function createSettlementJudge(options: SettlementJudgeOptions): SettlementJudge {
  const evmNetworks = options.networks.filter((n) => n.startsWith('eip155:'))
  const solanaNetworks = options.networks.filter((n) => n.startsWith('solana:'))
  const judges: SettlementJudge[] = []
  if (options.evmRpcUrl && evmNetworks.length > 0) {
    judges.push(
      createEvmJudge({
        rpcUrl: options.evmRpcUrl,
        networks: evmNetworks,
        ...(options.payerKey ? { payerKey: options.payerKey } : {}),
      }),
    )
  }
  if (options.solanaRpcUrl && solanaNetworks.length > 0) {
    judges.push(createSolanaJudge({ rpcUrl: options.solanaRpcUrl, networks: solanaNetworks }))
  }
  const judgeOf = (network: string) => judges.find((j) => j.covers(network))
  return {
    covers: (network) => judgeOf(network) !== undefined,
    async judge(question) {
      const judge = judgeOf(question.network)
      if (judge === undefined) {
        return { kind: 'undecided', why: `no RPC configured for ${question.network}` }
      }
      return judge.judge(question)
    },
  }
}
