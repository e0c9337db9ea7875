/**
 * Whether litesvm, the local Solana VM of the devnet, can load on this machine. Its native binary
 * comes from an optional package per platform (`litesvm-linux-x64-gnu`, `litesvm-darwin-arm64`, …)
 * that npm skips, without an error, where the registry has none for the installed version: then
 * `import 'litesvm'` throws a message about an npm bug that does not apply. `npm run dev` checks
 * first, says what is missing and runs the Base rail alone.
 */

/** The messages of an error and of its chain of causes, outermost first. */
function causeMessages(error: unknown): string[] {
  const messages: string[] = []
  for (let e: unknown = error; e instanceof Error && messages.length < 20; e = e.cause) {
    messages.push(e.message)
  }
  return messages
}

/**
 * The one line `npm run dev` prints when litesvm cannot load: Solana is off, why (the platform and
 * the package it looked for), that the demo runs Base alone, and how to get Solana.
 *
 * @param error - what `import('litesvm')` threw
 * @param platform - `<platform>-<arch>`, e.g. `darwin-arm64`
 * @example litesvmMissingMessage(error, 'darwin-arm64')
 * // 'npm run dev: Solana is off: the local Solana VM (litesvm) cannot load on darwin-arm64, …'
 */
export function litesvmMissingMessage(error: unknown, platform: string): string {
  const messages = causeMessages(error)
  const missing = messages
    .map((m) => /Cannot find module '(litesvm-[\w-]+)'/.exec(m)?.[1])
    .filter((name): name is string => name !== undefined && !name.includes('wasm'))
  const looked = missing.length
    ? ` (no ${missing.map((m) => `\`${m}\``).join(', ')} in node_modules)`
    : ''
  return (
    `npm run dev: Solana is off: the local Solana VM (litesvm) cannot load on ${platform}, ` +
    `its native binary is not installed${looked}, so the demo runs Base alone. ` +
    'npm skips that optional package where the registry has no build of this litesvm version for ' +
    'the platform; to get Solana, run `npm install` again (it fetches the build once one exists) ' +
    'or run the demo on Linux x64. The service itself (`npm start`) does not use litesvm.'
  )
}

/**
 * Loads litesvm, or says why it cannot.
 *
 * @param load - the import (tests pass one that fails as a missing binary does)
 * @returns `undefined` when it loads, else the message of {@link litesvmMissingMessage}
 * @example
 * const why = await litesvmUnavailable()
 * const stack = why ? await startDevStack({ rails: ['evm'] }) : await startDevStack()
 */
export async function litesvmUnavailable(
  load: () => Promise<unknown> = () => import('litesvm'),
  platform = `${process.platform}-${process.arch}`,
): Promise<string | undefined> {
  try {
    await load()
    return undefined
  } catch (error) {
    return litesvmMissingMessage(error, platform)
  }
}
