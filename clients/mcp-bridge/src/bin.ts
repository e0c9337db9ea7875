#!/usr/bin/env node
import { runCall, USAGE, UsageError } from './cli.js'
import { ConfigError, loadConfig } from './config.js'
import { keepStdoutForJsonRpc, stderrLog } from './log.js'
import { runServer } from './server.js'

/** `payload-tools-mcp [call <tool> ['<json>'] | help]`: see the README. */
async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  if (command === undefined) {
    keepStdoutForJsonRpc()
    await runServer(loadConfig(), stderrLog)
    return 0
  }
  if (command === 'call') {
    return runCall(rest, loadConfig(), stderrLog, {
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
