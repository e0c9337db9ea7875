/**
 * `npm run cluster -- --instances 3`: several instances of the service behind Debian's nginx on
 * this machine, offline, as docs/deploy.md describes a production deployment.
 *
 * Starts the dev stack (anvil and litesvm with USDC, the official facilitator, funded payers), a
 * fresh database on the system PostgreSQL (127.0.0.1:5432, dropped at the end), N instances
 * sharing it, the system Redis and one TELEMETRY_SALT, and nginx on the shipped
 * deploy/nginx.conf, and Debian's Prometheus scraping every instance (with the shipped alerting
 * rules); pays for one call per rail through the front and prints what to try.
 * Ctrl-C stops everything.
 *
 * Options: --instances N (default 3), --port P (front port; a free one by default),
 * --payers N (funded payers per chain, default 3).
 */
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { getBase58Decoder } from '@solana/kit'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { type Cluster, sharedEnv, startCluster } from '../src/devnet/cluster.js'
import { paidFetch } from '../src/devnet/payer.js'
import { createDatabase, type Database } from '../src/devnet/postgres.js'
import { pong, SYSTEM_REDIS_URL } from '../src/devnet/redis.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { logger } from '../src/logger.js'

const out = (line = '') => process.stdout.write(`${line}\n`)

let stack: DevStack | undefined
let db: Database | undefined
let cluster: Cluster | undefined
let stopping = false

/** Stops everything that was started, newest first, then exits with `code`. */
async function stop(code: number): Promise<void> {
  if (stopping) return
  stopping = true
  out('\nstopping: Prometheus, nginx, instances, database, chains…')
  await cluster?.stop().catch((e: unknown) => logger.error({ err: String(e) }, 'cluster stop'))
  await db?.drop().catch((e: unknown) => logger.error({ err: String(e) }, 'database drop'))
  await stack?.stop().catch((e: unknown) => logger.error({ err: String(e) }, 'stack stop'))
  // The logs stay for a post-mortem when the cluster failed.
  if (cluster && code === 0) rmSync(cluster.dir, { recursive: true, force: true })
  process.exit(code)
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      instances: { type: 'string', default: '3' },
      port: { type: 'string' },
      payers: { type: 'string', default: '3' },
    },
  })
  const count = Number(values.instances)
  const payers = Number(values.payers)
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(payers) || payers < 1) {
    throw new Error('usage: npm run cluster -- [--instances N] [--port P] [--payers N]')
  }
  logger.level = process.env.LOG_LEVEL ?? 'warn'
  const started = performance.now()

  // `on`, not `once`: Ctrl-C reaches this process twice (from the terminal and relayed by tsx),
  // and a second SIGINT without a listener would kill it before the database is dropped.
  process.on('SIGINT', () => void stop(0))
  process.on('SIGTERM', () => void stop(0))

  if (!(await pong(6379))) {
    out(
      `warning: no Redis at ${SYSTEM_REDIS_URL}: paid calls answer 503 guard_unavailable until it is up`,
    )
  }
  db = await createDatabase()
  stack = await startDevStack({ payers })
  cluster = await startCluster({
    instances: count,
    env: sharedEnv(stack, {
      databaseUrl: db.url,
      redisUrl: SYSTEM_REDIS_URL,
      salt: randomBytes(24).toString('base64url'),
    }),
    prometheus: true,
    ...(values.port ? { frontPort: Number(values.port) } : {}),
  })

  const front = cluster.frontUrl
  out(`Payload Tools cluster up in ${Math.round(performance.now() - started)} ms`)
  out(`  front        ${front}  (nginx, deploy/nginx.conf)`)
  for (const instance of cluster.instances) {
    out(`  ${instance.name.padEnd(12)} ${instance.url}  log ${instance.logFile}`)
  }
  out(`  database     ${db.url}  (fresh, dropped on exit)`)
  out(`  redis        ${SYSTEM_REDIS_URL}`)
  out(`  facilitator  ${stack.facilitatorUrl}`)
  out(`  Base chain   ${stack.evm.rpcUrl}  (anvil, chain id 8453)`)
  out(`  Solana       ${stack.solana.rpcUrl}  (litesvm)`)
  out(`  nginx logs   ${cluster.nginx.dir}/logs`)
  if (cluster.prometheus) {
    out(
      `  prometheus   ${cluster.prometheus.url}  (every instance's /metrics, deploy/prometheus/alerts.yml)`,
    )
  }
  out()

  const evmPayer = stack.evm.payers[0]
  const svmPayer = stack.solana.payers[0]
  if (!evmPayer || !svmPayer) throw new Error('the dev stack has no payers')
  const solana = { rpcUrl: stack.solana.rpcUrl, network: stack.solana.network }
  for (const [rail, keys] of [
    ['evm', { evmPrivateKey: evmPayer.privateKey }],
    ['solana', { solana: { secretKey: svmPayer.secretKey, ...solana } }],
  ] as const) {
    const pay = await paidFetch(keys, rail)
    const res = await pay(`${front}/hash`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"input":"abc"}',
    })
    const receipt = res.headers.get('PAYMENT-RESPONSE')
    const tx = receipt ? decodePaymentResponseHeader(receipt).transaction : '-'
    out(`Paid /hash through the front on ${rail}: HTTP ${res.status}, transaction ${tx}`)
    await res.body?.cancel()
  }
  out()
  out('Try it (payer keys of the dev stack, public: never fund them on a real chain):')
  out(`  curl -i -X POST ${front}/hash -H 'Content-Type: application/json' -d '{"input":"abc"}'`)
  for (const [i, payer] of stack.evm.payers.entries()) {
    out(`  PAYER_PRIVATE_KEY=${payer.privateKey} SERVICE_URL=${front} \\`)
    out(`    npm run pay -- hash '{"input":"evm payer ${i}"}'`)
  }
  for (const [i, payer] of stack.solana.payers.entries()) {
    const secret = getBase58Decoder().decode(payer.secretKey)
    out(
      `  PAYER_SOLANA_SECRET_KEY=${secret} SOLANA_RPC_URL=${stack.solana.rpcUrl} SERVICE_URL=${front} \\`,
    )
    out(`    npm run pay -- --rail solana hash '{"input":"solana payer ${i}"}'`)
  }
  out(`  curl ${front}/stats   (the same figures through every instance)`)
  out(`  curl ${cluster.instances[0]?.url}/health`)
  if (cluster.prometheus) {
    out(
      `  curl -H 'Authorization: Bearer ${cluster.metricsToken}' ${cluster.instances[0]?.url}/metrics`,
    )
    out(
      `  ${cluster.prometheus.url}/graph?g0.expr=sum%20by%20(network)%20(x402_payments_total)   (Prometheus)`,
    )
  }
  out()
  out(
    'Ctrl-C stops Prometheus, nginx, the instances, the chains and the facilitator, and drops the database.',
  )
}

main().catch((error: unknown) => {
  logger.fatal({ err: error instanceof Error ? error.stack : String(error) }, 'cluster failed')
  void stop(1)
})
