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
  it('names the platform and the package npm skipped, and says what the demo cannot do', async () => {
    const message = await litesvmUnavailable(async () => {
      throw missingBinary('litesvm-darwin-arm64')
    }, 'darwin-arm64')
    expect(message?.split('\n')[0]).toBe(
      'npm run dev: the local Solana VM (litesvm) cannot load on darwin-arm64: its native binary is not installed (no `litesvm-darwin-arm64` in node_modules).',
    )
    expect(message).toContain('it does not start on Base alone (yet)')
    expect(message).toContain('The service itself (`npm start`) does not use litesvm.')
    expect(message).not.toContain('npm/cli/issues/4828')
  })

  it('still says it cannot load when the error names no package', () => {
    expect(litesvmMissingMessage(new Error('Failed to load native binding'), 'linux-x64')).toMatch(
      /^npm run dev: the local Solana VM \(litesvm\) cannot load on linux-x64: its native binary is not installed\.\n/,
    )
  })

  it('is silent where litesvm loads (here)', async () => {
    expect(await litesvmUnavailable()).toBeUndefined()
  })
})
