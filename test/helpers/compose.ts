import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// What test/compose.test.ts (the file checked without a container engine) and
// test/compose.system.test.ts (its nginx entrypoint run, podman-compose's dry run) share.

/** The repository's root, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** A file of the repository, by its path from the root. */
export const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8')
export const INSTANCES = ['app1', 'app2', 'app3']
/** What an operator must set (deploy/.env); the test's values. */
export const REQUIRED = {
  POSTGRES_PASSWORD: 'compose-test-password',
  TELEMETRY_SALT: 'compose-test-salt-0123',
}

/** Runs `file` in the repository's root with PATH and `env` only; never throws for its exit. */
export function run(
  file: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: ROOT, env: { PATH: process.env.PATH, ...env } },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
        }),
    )
  })
}
