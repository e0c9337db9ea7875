import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { getBase58Decoder } from '@solana/kit'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http'
import { validateDiscoveryExtension } from '@x402/extensions/bazaar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { llmsExamples, llmsSnippets } from '../src/descriptions/discovery/llms-txt.js'
import type { DevStack } from '../src/devnet/stack.js'
import { findToolByPath } from '../src/tools/catalog.js'
import type { ToolEnv } from '../src/tools/types.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance as payToBalanceOn, type Rail } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// Discovery against real parts: anvil (Base, chain id 8453) and litesvm (Solana) with USDC at the
// real addresses, the official @x402/core facilitator, the service over HTTP on a loopback port,
// and the official @x402/fetch client with the EVM and SVM exact schemes as the payer. What an
// agent reads in /openapi.json, /.well-known/x402 and /llms.txt must work on the first try.

const clock: ToolEnv = { nowSeconds: () => 1_767_225_600 }
const ROOT = fileURLToPath(new URL('..', import.meta.url))
let dev: DevService
let stack: DevStack
let svc: RunningService

beforeAll(async () => {
  dev = await startDevService({ payers: 2, clock })
  ;({ stack, svc } = dev)
})
afterAll(() => dev?.stop())

const payToBalance = (rail: Rail) => payToBalanceOn(stack, rail)

describe('discovery on the devnet', () => {
  it('every paid path in /openapi.json answers an empty POST with 402, both rails and bazaar', async () => {
    const doc = await json(await fetch(`${svc.baseUrl}/openapi.json`))
    const paid = Object.entries(doc.paths as Awaited<ReturnType<typeof json>>).filter(
      ([, item]) => item.post?.['x-payment-info'],
    )
    expect(paid).toHaveLength(8)
    for (const [path, item] of paid) {
      const res = await fetch(`${svc.baseUrl}${path}`, { method: 'POST' })
      expect(res.status, path).toBe(402)
      const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
      expect(required.x402Version).toBe(2)
      const advertised = item.post['x-payment-info'].x402.accepts as {
        network: string
        amount: string
        payTo: string
        asset: string
      }[]
      expect(
        required.accepts.map(({ network, amount, payTo, asset }) => ({
          network,
          amount,
          payTo,
          asset,
        })),
      ).toEqual(advertised)
      expect(advertised.map((a) => [a.network, a.payTo])).toEqual([
        ['eip155:8453', stack.evm.payTo],
        [stack.solana.network, stack.solana.payTo],
      ])
      const bazaar = required.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0]
      expect(validateDiscoveryExtension(bazaar), path).toEqual({ valid: true })
    }
  })

  it('every /.well-known/x402 resource answers 402', async () => {
    const doc = await json(await fetch(`${svc.baseUrl}/.well-known/x402`))
    expect(doc.resources).toHaveLength(8)
    for (const url of doc.resources as string[]) {
      expect(url.startsWith(`${svc.baseUrl}/`)).toBe(true)
      const res = await fetch(url, { method: 'POST' })
      expect(res.status, url).toBe(402)
      expect(
        decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '').accepts,
      ).toHaveLength(2)
    }
  })

  it('/capabilities lists both devnet rails as live, each marked as simulated on a local devnet', async () => {
    const doc = await json(await fetch(`${svc.baseUrl}/capabilities`))
    expect(
      doc.x402.rails.map((r: { network: string; payTo: string; devnet?: true }) => [
        r.network,
        r.payTo,
        r.devnet,
      ]),
    ).toEqual([
      ['eip155:8453', stack.evm.payTo, true],
      [stack.solana.network, stack.solana.payTo, true],
    ])
  })

  it('says on /llms.txt and /health that the devnet is a demo where no real money moves', async () => {
    const llms = await (await fetch(`${svc.baseUrl}/llms.txt`)).text()
    expect(llms.split('\n')[2]).toContain(
      'Base and Solana (simulated on a local devnet, for trying the service: its USDC has no value, no real money moves)',
    )
    const health = await json(await fetch(`${svc.baseUrl}/health`))
    expect(health.devnet).toBe(
      'The payment networks are simulated on a local devnet, for trying the service: its USDC has no value, no real money moves.',
    )
  })

  it('runs the /llms.txt @x402/fetch snippets as written, on Base and on Solana', async () => {
    const snippets = llmsSnippets(await (await fetch(`${svc.baseUrl}/llms.txt`)).text())
    expect(snippets).toHaveLength(2)
    const env = {
      PATH: process.env.PATH ?? '',
      PAYER_PRIVATE_KEY: stack.evm.payers[1]?.privateKey as string,
      PAYER_SOLANA_SECRET_KEY: getBase58Decoder().decode(
        stack.solana.payers[1]?.secretKey as Uint8Array,
      ),
      SOLANA_RPC_URL: stack.solana.rpcUrl,
    }
    const before = { evm: await payToBalance('evm'), solana: await payToBalance('solana') }
    for (const snippet of snippets) {
      // As `node pay.mjs` would run it, from the project root (its node_modules).
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--input-type=module', '-e', snippet],
        { cwd: ROOT, env, timeout: 60_000 },
      )
      const [status, body] = [stdout.slice(0, 4), stdout.slice(4)]
      expect(status).toBe('200 ')
      expect(JSON.parse(body)).toMatchObject({ ok: true, result: { algorithm: 'SHA-256' } })
    }
    expect(await payToBalance('evm')).toBe(before.evm + 1000n)
    expect(await payToBalance('solana')).toBe(before.solana + 1000n)
  })

  it('every /llms.txt example succeeds when paid, alternating Base and Solana', async () => {
    const text = await (await fetch(`${svc.baseUrl}/llms.txt`)).text()
    const examples = llmsExamples(text)
    expect(examples.map((e) => e.path)).toEqual([
      '/hash',
      '/base64',
      '/hmac',
      '/json-validate',
      '/jwt-inspect',
      '/text-diff',
      '/pipeline',
      '/payload-inspect',
    ])
    const pay = {
      evm: await paidFetch(payerKeys(stack, 'evm'), 'evm'),
      solana: await paidFetch(payerKeys(stack, 'solana'), 'solana'),
    }
    const before = { evm: await payToBalance('evm'), solana: await payToBalance('solana') }
    const expected = { evm: 0n, solana: 0n }
    for (const [i, { path, body }] of examples.entries()) {
      const rail: Rail = i % 2 === 0 ? 'evm' : 'solana'
      const res = await pay[rail](`${svc.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status, `${path} on ${rail}`).toBe(200)
      const tool = findToolByPath(path)
      if (!tool) throw new Error(`no tool at ${path}`)
      const result = tool.run(tool.input.parse(body), clock)
      expect(await res.json()).toEqual({ ok: true, result: JSON.parse(JSON.stringify(result)) })
      const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
      expect(receipt.success).toBe(true)
      expect(receipt.network).toBe(rail === 'evm' ? 'eip155:8453' : stack.solana.network)
      expected[rail] += BigInt(tool.price)
    }
    expect(expected).toEqual({
      evm: 1000n + 1000n + 1000n + 3000n,
      solana: 1000n + 1000n + 1000n + 3000n,
    })
    expect(await payToBalance('evm')).toBe(before.evm + expected.evm)
    expect(await payToBalance('solana')).toBe(before.solana + expected.solana)
  })
})
