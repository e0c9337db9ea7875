import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { accessSync, constants } from 'node:fs'
import { fileURLToPath } from 'node:url'

// Podman as this machine runs it (Debian's podman 4.3, rootful): its default runtime, crun, fails
// on this host's cgroups, runc works; `build` and `run` need explicit ulimits for the same reason.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The tag of this checkout's test images (`e2e-` and 12 hex digits of its path): podman's image
 * store is the machine's, and two checkouts testing at once must not run each other's builds.
 * The layer cache is shared all the same.
 */
export const CHECKOUT_TAG = `e2e-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`

/** Global flags of every podman command here. */
export const PODMAN_GLOBAL = ['--runtime', 'runc'] as const
/** Flags of `podman build` and `podman run`. */
export const PODMAN_LIMITS = [
  '--ulimit',
  'nofile=1024:1024',
  '--ulimit',
  'nproc=1024:1024',
] as const

/** What a podman command printed and how it ended. */
export interface PodmanResult {
  code: number
  stdout: string
  stderr: string
}

/**
 * Runs `podman <args>` (with {@link PODMAN_GLOBAL}); never throws for a non-zero exit.
 *
 * @example const { stdout } = await podman(['image', 'inspect', 'localhost/payload-tools-base:bookworm-node24.21.0'])
 * @param timeoutMs - killed after this long (SIGKILL), code then -1
 */
export function podman(args: readonly string[], timeoutMs = 120_000): Promise<PodmanResult> {
  return run('podman', [...PODMAN_GLOBAL, ...args], timeoutMs)
}

/** Like {@link podman}, but throws with the command's stderr unless it exits 0; resolves stdout. */
export async function podmanOk(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  const result = await podman(args, timeoutMs)
  if (result.code !== 0) {
    throw new Error(
      `podman ${args.join(' ')} exited ${result.code}:\n${result.stderr.slice(-4000)}`,
    )
  }
  return result.stdout
}

function run(file: string, args: readonly string[], timeoutMs: number): Promise<PodmanResult> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: ROOT, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/**
 * Why the container test cannot run here, or undefined when it can: it needs Linux, root (rootful
 * podman; debootstrap) and Debian's `podman`, `runc` and `debootstrap` (`.ci/run` installs them).
 */
export function podmanUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `needs Linux (this is ${process.platform})`
  if (process.getuid?.() !== 0) return 'needs root (rootful podman, debootstrap for the local base)'
  const missing = ['/usr/bin/podman', '/usr/sbin/runc', '/usr/sbin/debootstrap'].filter((path) => {
    try {
      accessSync(path, constants.X_OK)
      return false
    } catch {
      return true
    }
  })
  if (missing.length > 0) {
    return `${missing.join(', ')} missing: apt-get install podman runc debootstrap (.ci/run does it)`
  }
  return undefined
}

/**
 * The local stand-in for `node:24-bookworm-slim` (scripts/container-base.sh): built once with
 * debootstrap and the npm registry's Node, then found in podman's image store by its tag
 * (Debian release and exact Node version).
 *
 * @returns the image name, e.g. `localhost/payload-tools-base:bookworm-node24.21.0`
 * @throws Error with the script's output when it fails
 */
export async function standInBase(nodeMajor = 24): Promise<string> {
  const result = await run('bash', ['scripts/container-base.sh', String(nodeMajor)], 20 * 60_000)
  if (result.code !== 0) {
    throw new Error(
      `scripts/container-base.sh exited ${result.code}:\n${result.stderr.slice(-4000)}`,
    )
  }
  return result.stdout.trim().split('\n').at(-1) ?? ''
}

/**
 * Builds the repository's Dockerfile on `base` as `tag`, in Docker's image format (the OCI
 * format has no HEALTHCHECK), on the host network (the build installs from npm and Debian).
 * Podman's layer cache keeps the toolchain and the dependency layers while the lockfile is
 * unchanged.
 *
 * @throws Error with the end of the build log when the build fails
 */
export async function buildImage(base: string, tag: string): Promise<void> {
  await podmanBuild(base, tag, '.', undefined, 30 * 60_000)
}

/**
 * `podman build` of `context` (its Dockerfile, at `target` when given) on `base` as `tag`, in
 * Docker's image format, on the host network, within `timeoutMs`.
 */
function podmanBuild(
  base: string,
  tag: string,
  context: string,
  target: string | undefined,
  timeoutMs: number,
): Promise<string> {
  return podmanOk(
    [
      'build',
      ...PODMAN_LIMITS,
      '--network',
      'host',
      '--format',
      'docker',
      '--build-arg',
      `BASE=${base}`,
      ...(target === undefined ? [] : ['--target', target]),
      '--tag',
      tag,
      context,
    ],
    timeoutMs,
  )
}

/** Size of an image in bytes, layers of its base included. */
export async function imageSize(image: string): Promise<number> {
  return Number((await podmanOk(['image', 'inspect', '--format', '{{.Size}}', image])).trim())
}

/** Images standing in for the official ones deploy/compose.yaml names, by service. */
export interface ComposeStandIns {
  nginx: string
  postgres: string
  redis: string
}

/**
 * Builds test/fixtures/compose-stand-ins on `base`: Debian's nginx, PostgreSQL 15 and Redis with
 * the part of the official images' contract compose.yaml relies on. Cached like any build.
 *
 * @returns the image names, `localhost/payload-tools-stand-in-<service>:<CHECKOUT_TAG>`
 */
export async function buildComposeStandIns(base: string): Promise<ComposeStandIns> {
  const images = {} as ComposeStandIns
  for (const service of ['nginx', 'postgres', 'redis'] as const) {
    images[service] = `localhost/payload-tools-stand-in-${service}:${CHECKOUT_TAG}`
    await podmanBuild(
      base,
      images[service],
      'test/fixtures/compose-stand-ins',
      service,
      20 * 60_000,
    )
  }
  return images
}
