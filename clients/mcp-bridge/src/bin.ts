#!/usr/bin/env node
import { ConfigError, loadConfig } from './config.js'
import { keepStdoutForJsonRpc, stderrLog } from './log.js'
import { USAGE, UsageError } from './usage.js'

// The server and the command line are loaded on demand: `help` and a configuration error answer
// without loading the MCP SDK, viem or @solana/kit.

/** `payload-tools-mcp [call <tool> ['<json>'] | refund | help]`: see the README. */
async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  if (command === undefined) {
    keepStdoutForJsonRpc()
    const config = await loadConfig()
    const { runServer } = await import('./server.js')
    await runServer(config, stderrLog)
    return 0
  }
  if (command === 'refund') {
    if (rest.length) throw new UsageError(`refund: unexpected ${rest.join(' ')}`)
    const config = await loadConfig()
    const { runRefund } = await import('./cli.js')
    return runRefund(config, stderrLog, {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
    })
  }
  if (command === 'call') {
    const config = await loadConfig()
    const { runCall } = await import('./cli.js')
    return runCall(rest, config, stderrLog, {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
    })
  }
  throw new UsageError(`unknown command ${command}`)
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`payload-tools-mcp: ${error.message}\n${USAGE}\n`)
      process.exit(2)
    }
    // ConfigError messages name the variable and never hold a key; anything else is unexpected.
    const text = error instanceof ConfigError ? error.message : String(error)
    process.stderr.write(`payload-tools-mcp: ${text}\n`)
    process.exit(1)
  },
)
