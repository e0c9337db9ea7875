import { x402HTTPClient } from '@x402/core/client'
import { loadConfig } from '../src/config.js'
import { type PayerKeys, payerClient } from '../src/devnet/payer.js'
import { startDevStack } from '../src/devnet/stack.js'
import { createService } from '../src/service.js'
import { listen } from './http.js'
import { median, table } from './measure.js'

/**
 * Devnet round trip of one paid call per rail, phase by phase (ms, medians over `calls`):
 * the unpaid request (402), signing with the official client, and the paid request (verify,
 * run, settle on the local chain, 200). Sequential, one payer per rail.
 */
export async function benchPaid(calls: number): Promise<string> {
  const stack = await startDevStack({ payers: 1 })
  const config = loadConfig({ ...stack.serviceEnv, LOG_LEVEL: 'silent' })
  const service = createService(config)
  const target = await listen(service.app.fetch)
  // Worker start-up (tsx compiles the tools in each thread) is not part of a round trip; on a
  // loaded machine a first call could wait past its queue deadline for it (503 overloaded).
  await service.runner.warm()
  const rows: (string | number)[][] = []
  try {
    const rails: { rail: 'evm' | 'solana'; label: string; keys: PayerKeys }[] = [
      {
        rail: 'evm',
        label: 'Base (anvil)',
        keys: { evmPrivateKey: stack.evm.payers[0]?.privateKey },
      },
      {
        rail: 'solana',
        label: 'Solana (litesvm)',
        keys: {
          solana: {
            secretKey: stack.solana.payers[0]?.secretKey as Uint8Array,
            rpcUrl: stack.solana.rpcUrl,
            network: stack.solana.network,
          },
        },
      },
    ]
    for (const { rail, label, keys } of rails) {
      const http = new x402HTTPClient(await payerClient(keys, rail))
      const phases = {
        unpaid: [] as number[],
        sign: [] as number[],
        paid: [] as number[],
        total: [] as number[],
      }
      for (let i = 0; i < calls + 2; i++) {
        const body = JSON.stringify({ input: `bench ${rail} ${i}` })
        const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }
        const t0 = performance.now()
        const unpaid = await fetch(`${target.url}/hash`, init)
        await unpaid.text()
        const t1 = performance.now()
        const payload = await http.createPaymentPayload(
          http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)),
        )
        const headers = { ...init.headers, ...http.encodePaymentSignatureHeader(payload) }
        const t2 = performance.now()
        const paid = await fetch(`${target.url}/hash`, { ...init, headers })
        const answer = await paid.text()
        const t3 = performance.now()
        if (paid.status !== 200) throw new Error(`paid call answered ${paid.status}: ${answer}`)
        if (i < 2) continue // warm-up
        phases.unpaid.push(t1 - t0)
        phases.sign.push(t2 - t1)
        phases.paid.push(t3 - t2)
        phases.total.push(t3 - t0)
      }
      const ms = (v: number[]) => `${median(v).toFixed(1)} ms`
      rows.push([label, ms(phases.unpaid), ms(phases.sign), ms(phases.paid), ms(phases.total)])
    }
  } finally {
    await target.close()
    await service.close()
    await stack.stop()
  }
  return table(
    ['rail', '402 (unpaid)', 'client signs', 'paid request (verify, run, settle)', 'round trip'],
    rows,
  )
}
