import { describe, expect, it } from 'vitest'
import { litesvmMissingMessage, litesvmUnavailable } from './native.js'

/** What litesvm 1.5.0 throws where its platform package is absent (its loader's error chain). */
function missingBinary(pkg: string): Error {
  const error = new Error(
    'Cannot find native binding. npm has a bug related to optional dependencies (https://github.com/npm/cli/issues/4828). ' +
      'Please try `npm i` again after removing both package-lock.json and node_modules directory.',
  )
  const wasm = new Error("Cannot find module 'litesvm-wasm32-wasi'")
  const native = new Error(`Cannot find module '${pkg}'`)
  wasm.cause = native
  error.cause = wasm
  return error
}

describe('litesvm missing', () => {
  it('says in one line that Solana is off: the platform, the package npm skipped, Base alone, how to get it', async () => {
    const message = await litesvmUnavailable(async () => {
      throw missingBinary('litesvm-darwin-arm64')
    }, 'darwin-arm64')
    expect(message).toBe(
      'npm run dev: Solana is off: the local Solana VM (litesvm) cannot load on darwin-arm64, ' +
        'its native binary is not installed (no `litesvm-darwin-arm64` in node_modules), so the demo runs Base alone. ' +
        'npm skips that optional package where the registry has no build of this litesvm version for the platform; ' +
        'to get Solana, run `npm install` again (it fetches the build once one exists) or run the demo on Linux x64. ' +
        'The service itself (`npm start`) does not use litesvm.',
    )
    expect(message).not.toContain('\n')
    expect(message).not.toContain('npm/cli/issues/4828')
  })

  it('still says Solana is off when the error names no package', () => {
    expect(litesvmMissingMessage(new Error('Failed to load native binding'), 'linux-x64')).toMatch(
      /^npm run dev: Solana is off: the local Solana VM \(litesvm\) cannot load on linux-x64, its native binary is not installed, so the demo runs Base alone\. /,
    )
  })

  it('is silent where litesvm loads (here)', async () => {
    expect(await litesvmUnavailable()).toBeUndefined()
  })
})
