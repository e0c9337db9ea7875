import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnChild, waitFor } from './child.js'

const dir = mkdtempSync(join(tmpdir(), 'child-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const env = { PATH: process.env.PATH }

/** True while a process with this pid exists (zombies excluded). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^\d+ \(.*\) Z/.test(stat)
  } catch {
    return false
  }
}

describe('spawnChild', () => {
  it('runs the program itself under the returned pid and reports its exit', async () => {
    const log = join(dir, 'pid.log')
    const child = spawnChild('/bin/sh', ['-c', 'echo "pid $$"; exit 3'], { env, logFile: log })
    expect(await child.exited).toEqual({ code: 3, signal: null })
    expect(readFileSync(log, 'utf8')).toBe(`pid ${child.pid}\n`)
    expect(child.logTail()).toBe(`pid ${child.pid}\n`)
    expect(child.running()).toBe(false)
    expect(child.kill('SIGTERM')).toBe(false)
  })

  it('stops with the given signal, then SIGKILL once the grace period is over', async () => {
    const polite = spawnChild('sleep', ['30'], { env })
    expect(await polite.stop({ signal: 'SIGINT', graceMs: 5_000 })).toEqual({
      code: null,
      signal: 'SIGINT',
    })
    const stubborn = spawnChild('/bin/sh', ['-c', 'trap "" TERM; while :; do sleep 0.05; done'], {
      env,
    })
    await sleep(200)
    const started = performance.now()
    expect(await stubborn.stop({ graceMs: 300 })).toEqual({ code: null, signal: 'SIGKILL' })
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
  })

  it.runIf(process.getuid?.() === 0)('runs the program as another OS user when root', async () => {
    const log = join(dir, 'user.log')
    const child = spawnChild('id', ['-un'], { env, logFile: log, user: 'postgres' })
    expect(await child.exited).toEqual({ code: 0, signal: null })
    expect(readFileSync(log, 'utf8')).toBe('postgres\n')
  })

  it('takes the child down when the parent dies, even by SIGKILL', async () => {
    // A parent process that starts `sleep` through spawnChild, prints its pid, then waits.
    const pidFile = join(dir, 'orphan.pid')
    const parent = spawnChild(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { writeFileSync } from 'node:fs'
         import { spawnChild } from './src/devnet/child.ts'
         const c = spawnChild('sleep', ['60'], { env: { PATH: process.env.PATH } })
         writeFileSync(${JSON.stringify(pidFile)}, String(c.pid))
         setInterval(() => {}, 1000)`,
      ],
      { env: { ...env, HOME: process.env.HOME }, cwd: process.cwd(), logFile: join(dir, 'p.log') },
    )
    await waitFor('orphan pid', async () => existsSync(pidFile), {
      timeoutMs: 30_000,
      alive: parent.running,
    })
    const orphan = Number(readFileSync(pidFile, 'utf8'))
    expect(alive(orphan)).toBe(true)
    parent.kill('SIGKILL')
    await parent.exited
    await waitFor('orphan gone', async () => !alive(orphan), { timeoutMs: 30_000 })
  }, 120_000)
})
