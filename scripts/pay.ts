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
 * a blockhash from), SOLANA_NETWORK (default mainnet).
 */
import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import { getBase58Encoder } from '@solana/kit'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { Network, SettleResponse } from '@x402/core/types'
import canonicalize from 'canonicalize'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import type { Hex } from 'viem'
import { type PayerKeys, paidFetch } from '../src/devnet/payer.js'
import { findToolByPath } from '../src/tools/catalog.js'

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
      network: (process.env.SOLANA_NETWORK ?? 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp') as Network,
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
  const answer = (await res.json()) as { ok: boolean; result?: unknown }
  if (receipt) {
    const settled = decodePaymentResponseHeader(receipt)
    process.stdout.write(
      `settled: ${settled.success} on ${settled.network}, transaction ${settled.transaction}\n`,
    )
    if (res.ok) process.stdout.write(`${await checkReceipt(base, tool, body, settled, answer)}\n`)
  }
  process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`)
  return res.ok ? 0 : 1
}

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')

/**
 * The delivery receipt of the answer (docs/receipts.md), verified with jose against the service's
 * JWKS, its digests compared with the body sent (the tool's defaults applied) and the result.
 */
async function checkReceipt(
  base: string,
  tool: string,
  body: string,
  settled: SettleResponse,
  answer: { result?: unknown },
): Promise<string> {
  const jws = (settled.extensions?.['delivery-receipt'] as { info?: { receipt?: string } })?.info
    ?.receipt
  if (!jws) return 'receipt: none in PAYMENT-RESPONSE'
  try {
    const keys = createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`))
    const { payload, protectedHeader } = await jwtVerify(jws, keys, {
      typ: 'delivery-receipt+jwt',
    })
    const definition = findToolByPath(`/${tool.replace(/^\//, '')}`)
    const input = definition?.input.safeParse(JSON.parse(body))
    const inputOk = input?.success === true && payload.input_sha256 === sha256(input.data)
    const resultOk = payload.result_sha256 === sha256(answer.result)
    return (
      `receipt: signed by the service (key ${protectedHeader.kid}); input digest ` +
      `${inputOk ? 'matches' : 'DIFFERS'}, result digest ${resultOk ? 'matches' : 'DIFFERS'}`
    )
  } catch (error) {
    return `receipt: NOT verified: ${error instanceof Error ? error.message : String(error)}`
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`pay: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  },
)
