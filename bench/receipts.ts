import { createHash, generateKeyPairSync } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { x402HTTPClient } from '@x402/core/client'
import type { SettleResponse } from '@x402/core/types'
import canonicalize from 'canonicalize'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { loadConfig } from '../src/config.js'
import { type PayerKeys, payerClient } from '../src/devnet/payer.js'
import { startDevStack } from '../src/devnet/stack.js'
import { logger } from '../src/logger.js'
import { createReceipts, type Delivery, parseSigningKey } from '../src/receipts/index.js'
import { createService } from '../src/service.js'
import { hashTool } from '../src/tools/hash.js'
import { listen } from './http.js'
import { median, table, us } from './measure.js'
import { type BenchMode, benchMode, pick } from './mode.js'

/**
 * One awaited call of `fn`, in microseconds, medians of `rounds` rounds after a warm-up: its wall
 * time, and the process's CPU time (every thread: WebCrypto signs on the libuv pool), the steadier
 * figure on a shared machine.
 */
async function timeAsync(
  fn: () => Promise<unknown>,
  iterations: number,
  rounds: number,
): Promise<{ wall: number; cpu: number }> {
  for (let i = 0; i < iterations; i++) await fn()
  const wall: number[] = []
  const cpu: number[] = []
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) await fn()
    wall.push(Number(process.hrtime.bigint() - t0) / 1000 / iterations)
    const { user, system } = process.cpuUsage(c0)
    cpu.push((user + system) / iterations)
  }
  return { wall: median(wall), cpu: median(cpu) }
}

/** Median of the paid request (verify, run, settle, receipts) of `/hash` on one rail, in ms. */
async function paidRequestMs(base: string, keys: PayerKeys, rail: 'evm' | 'solana', calls: number) {
  const http = new x402HTTPClient(await payerClient(keys, rail))
  const times: number[] = []
  for (let i = 0; i < calls + 2; i++) {
    const init = {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: `receipt bench ${rail} ${i}` }),
    }
    const unpaid = await fetch(`${base}/hash`, init)
    await unpaid.text()
    const payload = await http.createPaymentPayload(
      http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)),
    )
    const headers = { ...init.headers, ...http.encodePaymentSignatureHeader(payload) }
    const t0 = performance.now()
    const paid = await fetch(`${base}/hash`, { ...init, headers })
    await paid.text()
    const t1 = performance.now()
    if (paid.status !== 200) throw new Error(`paid call answered ${paid.status}`)
    if (!paid.headers.get('PAYMENT-RESPONSE')) throw new Error('no PAYMENT-RESPONSE')
    if (i >= 2) times.push(t1 - t0)
  }
  return median(times)
}

/**
 * The cost of the receipts per paid call (issue 21), in process: the gate's one call
 * `receipts.deliver` (the delivery receipt and the official offer-receipt receipt, two Ed25519 JWS),
 * the delivery receipt alone, today's result digest on the main thread (a parse and an RFC 8785
 * serialisation of a /hash result), a verification with jose, and the two offers signed when a
 * tool's 402 is rebuilt (once per 150 s period); then, for scale, the median paid request of
 * `/hash` on the devnet (verify, run, settle and the receipts) on each rail.
 *
 * @param mode - `quick` and `smoke` take fewer rounds and paid calls
 */
export async function benchReceipts(mode: BenchMode): Promise<string> {
  const key = parseSigningKey(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  )
  const receipts = createReceipts({ issuer: 'https://tools.example', signingKey: key })
  const result = hashTool.run(hashTool.input.parse({ input: 'bench' }), { nowSeconds: () => 0 })
  const resultBytes = new TextEncoder().encode(JSON.stringify(result))
  const digest = (value: unknown) =>
    createHash('sha256')
      .update(canonicalize(value) ?? '')
      .digest('hex')
  const delivery: Delivery = {
    iat: 1_700_000_000,
    resource: 'https://tools.example/hash',
    tool: 'hash',
    input_sha256: digest({ input: 'bench', algorithm: 'SHA-256' }),
    result_sha256: digest(result),
    network: 'eip155:8453',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    amount: '1000',
    pay_to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    transaction: `0x${'ab'.repeat(32)}`,
  }
  const settlement: SettleResponse = {
    success: true,
    transaction: delivery.transaction as string,
    network: 'eip155:8453',
    payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
  }
  const iterations = pick(mode, { full: 500, quick: 100, smoke: 20 })
  const rounds = pick(mode, { full: 7, quick: 3, smoke: 1 })
  const receipt = await receipts.deliveryReceipt(delivery)
  const keySet = createLocalJWKSet(receipts.jwks())
  const offers = receipts.offerReceipt.extension.enrichPaymentRequiredResponse
  if (!offers) throw new Error('the offer-receipt extension has no 402 hook')
  const requirements = [
    {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '1000',
      asset: delivery.asset,
      payTo: delivery.pay_to,
      maxTimeoutSeconds: 60,
      extra: {},
    },
    {
      scheme: 'exact',
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      amount: '1000',
      asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      payTo: 'GnHJZ2r8nuwXtCdcpHWkCEBz4yWBS1dnN7uEcqMUzcBk',
      maxTimeoutSeconds: 60,
      extra: {},
    },
  ]
  let n = 0
  const inProcess: [string, { wall: number; cpu: number }][] = [
    [
      "receipts.deliver: delivery + offer-receipt receipts (the gate's call)",
      await timeAsync(() => receipts.deliver(settlement, delivery), iterations, rounds),
    ],
    [
      'delivery receipt alone (jose SignJWT, EdDSA)',
      await timeAsync(() => receipts.deliveryReceipt(delivery), iterations, rounds),
    ],
    [
      "today's result digest on the main thread (/hash result: parse + RFC 8785 + SHA-256)",
      await timeAsync(
        async () => digest(JSON.parse(new TextDecoder().decode(resultBytes))),
        iterations,
        rounds,
      ),
    ],
    [
      'verify a receipt (jose jwtVerify, local JWKS)',
      await timeAsync(() => jwtVerify(receipt, keySet), iterations, rounds),
    ],
    [
      "a tool's 402 rebuilt: 2 offers signed (once per 150 s period)",
      await timeAsync(
        () =>
          offers(receipts.offerReceipt.declaration['offer-receipt'], {
            requirements,
            // A new resource URL each time: no cache hit, two signatures.
            resourceInfo: { url: `https://tools.example/hash?${n++}` },
            paymentRequiredResponse: {
              x402Version: 2,
              resource: { url: `https://tools.example/hash?${n}` },
              accepts: requirements,
            },
          } as never),
        pick(mode, { full: 200, quick: 50, smoke: 10 }),
        rounds,
      ),
    ],
  ]

  const calls = pick(mode, { full: 20, quick: 5, smoke: 2 })
  const stack = await startDevStack({ payers: 1 })
  const service = createService(loadConfig({ ...stack.serviceEnv, LOG_LEVEL: 'silent' }))
  // As at start (src/main.ts): the workers load the tools before the first paid call.
  await service.runner.warm()
  const target = await listen(service.app.fetch)
  let paid: { label: string; ms: number }[]
  try {
    paid = [
      {
        label: 'Base (anvil)',
        ms: await paidRequestMs(
          target.url,
          { evmPrivateKey: stack.evm.payers[0]?.privateKey },
          'evm',
          calls,
        ),
      },
      {
        label: 'Solana (litesvm)',
        ms: await paidRequestMs(
          target.url,
          {
            solana: {
              secretKey: stack.solana.payers[0]?.secretKey as Uint8Array,
              rpcUrl: stack.solana.rpcUrl,
              network: stack.solana.network,
            },
          },
          'solana',
          calls,
        ),
      },
    ]
  } finally {
    await target.close()
    await service.close()
    await stack.stop()
  }
  const deliver = inProcess[0]?.[1].wall ?? 0
  return [
    table(
      ['step', 'wall (median)', 'CPU (median)'],
      inProcess.map(([label, { wall, cpu }]) => [label, us(wall), us(cpu)]),
    ),
    '',
    table(
      ['rail', `paid request of /hash (median of ${calls})`, 'receipts.deliver', 'share'],
      paid.map(({ label, ms }) => [
        label,
        `${ms.toFixed(1)} ms`,
        us(deliver),
        `${((deliver / 1000 / ms) * 100).toFixed(2)} %`,
      ]),
    ),
  ].join('\n')
}

// `npx tsx bench/receipts.ts [--quick|--smoke]` runs this section alone.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  logger.level = 'silent'
  process.stdout.write(`${await benchReceipts(benchMode())}\n`)
  process.exit(0)
}
