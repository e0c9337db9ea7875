/**
 * Pays for one tool call with the official @x402/fetch client and prints the result.
 *
 * @example
 * PAYER_PRIVATE_KEY=0x… npm run pay -- hash '{"input":"abc"}'
 * PAYER_SOLANA_SECRET_KEY=<base58 64-byte key> SOLANA_RPC_URL=http://127.0.0.1:8899 \
 *   npm run pay -- --rail solana hash '{"input":"abc"}'
 *
 * Environment: SERVICE_URL (default http://127.0.0.1:8402), PAYER_PRIVATE_KEY (EVM, hex),
 * PAYER_SOLANA_SECRET_KEY (base58), SOLANA_RPC_URL (the Solana RPC the client reads the mint and
 * a blockhash from), SOLANA_NETWORK (default: mainnet or devnet, whichever the 402 offers).
 */
import { parseArgs } from 'node:util'
import { getBase58Encoder } from '@solana/kit'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { Network } from '@x402/core/types'
import type { Hex } from 'viem'
import { type PayerKeys, paidFetch } from '../src/devnet/payer.js'

const usage = `usage: npm run pay -- [--rail evm|solana] [--url SERVICE_URL] <tool> '<json body>'
  tools: hash base64 hmac json-validate jwt-inspect text-diff pipeline payload-inspect`

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { rail: { type: 'string', default: 'evm' }, url: { type: 'string' } },
  })
  const [tool, body = '{}'] = positionals
  const rail = values.rail
  if (!tool || (rail !== 'evm' && rail !== 'solana')) {
    process.stderr.write(`${usage}\n`)
    return 2
  }
  const base = (values.url ?? process.env.SERVICE_URL ?? 'http://127.0.0.1:8402').replace(
    /\/+$/,
    '',
  )
  const keys: PayerKeys = {}
  if (rail === 'evm') {
    if (!process.env.PAYER_PRIVATE_KEY) throw new Error('PAYER_PRIVATE_KEY is not set')
    keys.evmPrivateKey = process.env.PAYER_PRIVATE_KEY as Hex
  } else {
    const secret = process.env.PAYER_SOLANA_SECRET_KEY
    const rpcUrl = process.env.SOLANA_RPC_URL
    if (!secret || !rpcUrl)
      throw new Error('PAYER_SOLANA_SECRET_KEY and SOLANA_RPC_URL must be set')
    keys.solana = {
      secretKey: new Uint8Array(getBase58Encoder().encode(secret)),
      rpcUrl,
      network: process.env.SOLANA_NETWORK as Network | undefined,
    }
  }
  const pay = await paidFetch(keys, rail)
  const started = performance.now()
  const res = await pay(`${base}/${tool.replace(/^\//, '')}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body,
  })
  const ms = Math.round(performance.now() - started)
  const receipt = res.headers.get('PAYMENT-RESPONSE')
  process.stdout.write(`HTTP ${res.status} in ${ms} ms (402 -> sign -> paid request)\n`)
  if (receipt) {
    const settled = decodePaymentResponseHeader(receipt)
    process.stdout.write(
      `settled: ${settled.success} on ${settled.network}, transaction ${settled.transaction}\n`,
    )
  }
  process.stdout.write(`${JSON.stringify(await res.json(), null, 2)}\n`)
  return res.ok ? 0 : 1
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`pay: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  },
)
