/**
 * Pays for one tool call with the official @x402/fetch client and prints the service's JSON
 * answer on stdout (alone: `npm run pay … | jq` works); status lines go to stderr. The logic and
 * its rules are in src/devnet/pay-command.ts.
 *
 * @example
 * PAYER_PRIVATE_KEY=0x… npm run pay -- hash '{"input":"abc"}'
 * PAYER_SOLANA_SECRET_KEY=<base58 64-byte key> SOLANA_RPC_URL=http://127.0.0.1:8899 \
 *   npm run pay -- --rail solana hash '{"input":"abc"}'
 * PAYER_PRIVATE_KEY=0x… EVM_RPC_URL=http://127.0.0.1:8545 \
 *   npm run pay -- --scheme batch-settlement hash '{"input":"abc"}'   # by voucher, Base
 * PAYER_PRIVATE_KEY=0x… EVM_RPC_URL=http://127.0.0.1:8545 npm run pay -- --refund
 *
 * Environment: SERVICE_URL (default http://127.0.0.1:8402), PAYER_PRIVATE_KEY (EVM, hex),
 * PAYER_SOLANA_SECRET_KEY (base58), SOLANA_RPC_URL (the Solana RPC the client reads the mint and
 * a blockhash from), SOLANA_NETWORK (default: mainnet or devnet, whichever the 402 offers),
 * EVM_RPC_URL (batch-settlement: the Base RPC the client reads its channel from),
 * PAYER_CHANNELS_DIR (the channel records, default ~/.payload-tools/channels).
 */
import { runPay } from '../src/devnet/pay-command.js'

/** Exits once stdout and stderr are flushed (pipes may be asynchronous), not before. */
const exit = (code: number) =>
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))

runPay(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(exit, (error: unknown) => {
  process.stderr.write(`pay: ${error instanceof Error ? error.message : String(error)}\n`)
  exit(1)
})
