import type { SettlementJudge, SettlementQuestion, SettlementVerdict } from './types.js'

/**
 * A judge of `networks` from a function that may throw: an RPC failure is `undecided`, named by
 * the error's class only (an RPC library's message may quote the URL, which may hold a key).
 */
export function neverThrowing(
  networks: ReadonlySet<string>,
  judge: (question: SettlementQuestion) => Promise<SettlementVerdict>,
): SettlementJudge {
  return {
    covers: (network) => networks.has(network),
    async judge(question) {
      try {
        return await judge(question)
      } catch (error) {
        const name = error instanceof Error ? error.name : 'unknown error'
        return { kind: 'undecided', why: `rpc failed: ${name}` }
      }
    },
  }
}
