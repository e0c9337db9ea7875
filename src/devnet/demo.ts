/**
 * `npm run dev`: the service with a paying demo, offline.
 *
 * Starts a local Base chain and a local Solana VM (USDC at the real addresses, the x402 escrow of
 * prepaid channels at its address), the official x402 facilitator with the EVM and SVM `exact`
 * schemes and the EVM `batch-settlement` one, and the service as production runs it: with the
 * chain judge (EVM_RPC_URL and SOLANA_RPC_URL are the local chains', the escrow is checked on the
 * first) and the settlement resolver started; then a funded demo payer pays for every tool once on
 * each rail (on Base from a prepaid channel: one deposit, then vouchers) and the commands to try
 * are printed. Ctrl-C stops it all.
 *
 * Where litesvm's native binary cannot load (no build of it for the platform, as litesvm 1.5.0 on
 * darwin-arm64), Solana is off: the first line says why, and the demo runs the Base rail alone
 * (no Solana VM, the facilitator with the EVM scheme only, the service without a Solana payTo).
 *
 * `npm run dev -- --testnet` runs the testnet stage instead: the chains pose as Base Sepolia
 * (chain id 84532, USDC named "USDC" at its Sepolia address) and Solana devnet (the devnet USDC
 * mint), and the service runs with X402_NETWORK=testnet.
 */
import './dev-logs.js'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { getBase58Decoder } from '@solana/kit'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { SettleResponse } from '@x402/core/types'
import { generatePrivateKey } from 'viem/accounts'
import { loadConfig } from '../config.js'
import { connectionCaps, listen } from '../http/node-server.js'
import { logger } from '../logger.js'
import { configuredRails } from '../payment/rails.js'
import { createService } from '../service.js'
import { RESOLVE_INTERVAL_MS } from '../settlement/resolver.js'
import { createTelemetry } from '../telemetry/index.js'
import { catalog } from '../tools/catalog.js'
import { usdcDecimal } from '../tools/price.js'
import { shortChannel } from './channel-words.js'
import { paidFetch } from './payer.js'
import { channelScheme } from './payer-channels.js'
import { litesvmUnavailable } from './solana/native.js'
import { startDevStack } from './stack.js'

const out = (line = '') => process.stdout.write(`${line}\n`)

/**
 * The log level once the demo payments are done: `LOG_LEVEL`, else `info` (the README's default):
 * one line per request, so that a 429 or a refused payment that explains a failure is on screen.
 */
const DEV_LOG_LEVEL = 'info'

async function main(): Promise<void> {
  // The demo's own table stays readable (warnings only) unless LOG_LEVEL says otherwise.
  logger.level = process.env.LOG_LEVEL || 'warn'
  const { values } = parseArgs({ options: { testnet: { type: 'boolean', default: false } } })
  // litesvm loads its native binary when imported (the stack imports it only for the Solana rail):
  // where it cannot, Solana is off, the first line says why, and the demo runs Base alone.
  const solanaOff = await litesvmUnavailable()
  if (solanaOff) out(solanaOff)
  const stage = values.testnet ? 'testnet' : 'mainnet'
  const started = performance.now()
  const stack = solanaOff
    ? await startDevStack({ stage, rails: ['evm'] })
    : await startDevStack({ stage })
  // Without the Solana VM, no Solana rail either, even if the shell sets its payTo.
  const { PAY_TO_SOLANA: _payTo, SOLANA_NETWORK: _network, ...shellEnv } = process.env
  // The chain judge on the local chains, as production sets it on the real ones: a settlement in
  // doubt is decided by the chain (on a payer's retry and by the resolver), never guessed.
  const judgeEnv = {
    EVM_RPC_URL: stack.evm.rpcUrl,
    ...(stack.solana ? { SOLANA_RPC_URL: stack.solana.rpcUrl } : {}),
  }
  const config = loadConfig({
    // The channels are new with the chain each run: a receiver-authorizer key of this run's own.
    BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY: generatePrivateKey(),
    ...(solanaOff ? shellEnv : process.env),
    ...stack.serviceEnv,
    ...judgeEnv,
  })
  // The chains are new each run, so the figures start from zero too (a temp SQLite file), unless
  // DATABASE_URL names a store.
  const telemetry = await createTelemetry({
    ...(config.databaseUrl
      ? { databaseUrl: config.databaseUrl }
      : { dataDir: mkdtempSync(join(tmpdir(), 'payload-tools-dev-')) }),
    ...(config.telemetrySalt ? { salt: config.telemetrySalt } : {}),
    ...(config.telemetryRetentionDays ? { retentionDays: config.telemetryRetentionDays } : {}),
  })
  // Channel records and the dev receiver-authorizer key are new each run too: a record of an
  // earlier run would name a channel this chain never saw.
  const service = createService(config, {
    telemetry,
    dataDir: mkdtempSync(join(tmpdir(), 'payload-tools-dev-channels-')),
  })
  // The pool is ready before the service says it is: the first demo calls would wait for it.
  await service.runner.warm()
  // As src/main.ts does: the escrow check, then batch-settlement is offered beside exact.
  await service.channels?.start()
  const server = await listen(
    service.app.fetch,
    { port: config.port, hostname: config.host },
    connectionCaps(config),
  )
  // Settlements left in doubt are decided on chain now and then, as src/main.ts does.
  service.resolver?.start()
  const base = config.publicBaseUrl
  const solana = stack.solana
  const evmPayer = stack.evm.payers[0]
  const svmPayer = solana?.payers[0]
  if (!evmPayer || (solana && !svmPayer)) throw new Error('the dev stack has no payers')
  const [evmRail, solanaRail] = (['evm', 'solana'] as const).map((id) =>
    configuredRails(config).find((rail) => rail.id === id),
  )
  const evmName = evmRail?.name ?? 'Base'
  const solanaName = solanaRail?.name ?? 'Solana'
  out(
    `Payload Tools dev stack up in ${Math.round(performance.now() - started)} ms ` +
      `(X402_NETWORK=${config.stage}: ${evmName}${solana ? ` and ${solanaName}` : ' only; Solana is off, see the first line'})`,
  )
  out(`  service      ${base}`)
  out(
    `  facilitator  ${stack.facilitatorUrl}  (official @x402/core facilitator, exact EVM${solana ? ' + SVM' : ''}, batch-settlement EVM)`,
  )
  out(
    `  ${evmName.padEnd(12)} ${stack.evm.rpcUrl}  (anvil, chain id ${stack.evm.chainId}, ` +
      `USDC ${stack.evm.usdcAddress}, EIP-712 name "${stack.evm.usdcDomain.name}")`,
  )
  if (solana) {
    out(`  ${solanaName.padEnd(12)} ${solana.rpcUrl}  (litesvm, USDC ${solana.usdcMint})`)
  }
  out(
    `  judge        ${Object.keys(judgeEnv).join(', ')} set to the chains above: settlements in doubt ` +
      `are decided on chain${service.resolver ? `, the resolver passing every ${RESOLVE_INTERVAL_MS / 1000} s` : ''}`,
  )
  out()

  const rails: { rail: 'evm' | 'solana'; keys: Parameters<typeof paidFetch>[0] }[] = [
    { rail: 'evm', keys: { evmPrivateKey: evmPayer.privateKey } },
  ]
  if (solana && svmPayer) {
    rails.push({
      rail: 'solana',
      keys: {
        solana: { secretKey: svmPayer.secretKey, rpcUrl: solana.rpcUrl, network: solana.network },
      },
    })
  }
  // The Base payments go through a prepaid channel when the service offers one (the official
  // batch-settlement client scheme, its record in memory): one deposit, then vouchers.
  const byChannel = service.channels?.status().offered === true
  for (const { rail, keys } of rails) {
    const paid: SettleResponse[] = []
    const channels =
      rail === 'evm' && byChannel
        ? channelScheme(evmPayer.privateKey, { rpcUrl: stack.evm.rpcUrl })
        : undefined
    out(
      `Demo payer pays for every tool on ${rail === 'evm' ? evmName : solanaName}` +
        `${channels ? ' from a prepaid channel (batch-settlement: one deposit, then vouchers)' : ''}:`,
    )
    const pay = await paidFetch(keys, rail, channels)
    for (const tool of catalog) {
      const t0 = performance.now()
      const res = await pay(`${base}${tool.path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(tool.examples[0]),
      })
      const ms = Math.round(performance.now() - t0)
      const receipt = res.headers.get('PAYMENT-RESPONSE')
      const settled = receipt ? decodePaymentResponseHeader(receipt) : undefined
      const body = JSON.stringify((await res.json()) as unknown)
      out(
        `  ${res.status} ${tool.path.padEnd(17)} ${String(ms).padStart(4)} ms  ${paidHow(settled)}  ${body.slice(0, 60)}…`,
      )
      if (settled) paid.push(settled)
    }
    const summary = channels ? channelSummary(paid) : undefined
    if (summary) out(`  ${summary}`)
  }
  const [evmBalance, svmBalance] = await Promise.all([
    stack.evm.usdcBalance(stack.evm.payTo),
    solana?.usdcBalance(solana.payTo),
  ])
  out(
    `payTo balances: ${evmName} ${evmBalance} atomic USDC` +
      (svmBalance === undefined ? '' : `, ${solanaName} ${svmBalance} atomic USDC`) +
      (byChannel
        ? ` (the channel's vouchers reach payTo when the service claims and settles them: every ${config.batchSettlement.claimIntervalSeconds} s and ${config.batchSettlement.settleIntervalSeconds} s)`
        : ''),
  )
  out()
  out('Try it:')
  out(`  curl -i -X POST ${base}/hash -H 'Content-Type: application/json' -d '{"input":"abc"}'`)
  out(`  PAYER_PRIVATE_KEY=${evmPayer.privateKey} SERVICE_URL=${base} \\`)
  out(`    npm run pay -- hash '{"input":"abc"}'`)
  if (byChannel) {
    out(
      `  PAYER_PRIVATE_KEY=${evmPayer.privateKey} EVM_RPC_URL=${stack.evm.rpcUrl} SERVICE_URL=${base} \\`,
    )
    out(
      `    npm run pay -- --scheme batch-settlement hash '{"input":"abc"}'  # by voucher; --refund: the rest back`,
    )
  }
  if (solana && svmPayer) {
    const solanaSecret = getBase58Decoder().decode(svmPayer.secretKey)
    out(
      `  PAYER_SOLANA_SECRET_KEY=${solanaSecret} SOLANA_RPC_URL=${solana.rpcUrl} SERVICE_URL=${base} \\`,
    )
    out(
      `    npm run pay -- --rail solana pipeline '{"input":"hi","operations":[{"type":"sha256"}]}'`,
    )
  }
  // The bridge reads its prepaid channel from this chain, not Base mainnet's public RPC.
  out(
    `  PAYLOAD_TOOLS_URL=${base} PAYER_PRIVATE_KEY=${evmPayer.privateKey} BASE_RPC_URL=${stack.evm.rpcUrl} \\`,
  )
  out(
    `    node clients/mcp-bridge/dist/bin.js call hash '{"input":"abc"}'  # the MCP bridge as a CLI`,
  )
  out(`  curl ${base}/health`)
  out(`  curl ${base}/stats`)
  out(`  ${base}/  (the landing page with live figures: open it in a browser)`)
  out()
  logger.level = process.env.LOG_LEVEL || DEV_LOG_LEVEL
  out(
    `Logging at ${logger.level}: one line per request on stdout (unpaid 402s at debug), ` +
      'refused payments and 429s included. LOG_LEVEL=debug npm run dev shows more, ' +
      'LOG_LEVEL=warn less; LOG_FORMAT=json prints the JSON lines the service writes in production.',
  )
  out('Ctrl-C stops the service, the chains and the facilitator.')

  const stop = async () => {
    server.close()
    await service.close()
    await telemetry.close()
    await stack.stop()
    process.exit(0)
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

main().catch((error: unknown) => {
  logger.fatal({ err: error instanceof Error ? error.stack : String(error) }, 'dev stack failed')
  process.exit(1)
})

/** How a demo call was paid, for its line: `tx 0x…`, `deposit, tx 0x…`, `voucher 0x5a1c…e93b`. */
function paidHow(settled: SettleResponse | undefined): string {
  if (!settled) return '-'.padEnd(24)
  const state = (settled.extra as { channelState?: { channelId?: string } } | undefined)
    ?.channelState
  if (!state?.channelId) return `tx ${settled.transaction.slice(0, 18)}…`.padEnd(24)
  return settled.transaction
    ? `deposit tx ${settled.transaction.slice(0, 10)}…`.padEnd(24)
    : `voucher ${shortChannel(state.channelId)}`.padEnd(24)
}

/**
 * The channel's line after the demo's Base payments: what was charged of the deposit, and how
 * many transactions (deposits) and vouchers paid the calls.
 */
function channelSummary(paid: SettleResponse[]): string | undefined {
  type State = { channelId?: string; balance?: string; chargedCumulativeAmount?: string }
  const states = paid.map((s) => (s.extra as { channelState?: State } | undefined)?.channelState)
  const last = states.at(-1)
  if (!last?.channelId || !last.balance || !last.chargedCumulativeAmount) return undefined
  const deposits = paid.filter((s, i) => states[i] && s.transaction).length
  const vouchers = paid.filter((s, i) => states[i] && !s.transaction).length
  return (
    `channel ${shortChannel(last.channelId)}: ${usdcDecimal(last.chargedCumulativeAmount)} USDC ` +
    `charged of its ${usdcDecimal(last.balance)} USDC deposit; ${deposits} transaction` +
    `${deposits === 1 ? '' : 's'} (deposit), ${vouchers} voucher${vouchers === 1 ? '' : 's'}`
  )
}
