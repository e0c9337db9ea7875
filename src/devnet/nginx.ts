import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Child, spawnChild, waitFor } from './child.js'
import { freePort } from './ports.js'

/** The shipped nginx configuration, a template (deploy/nginx.conf). */
export const NGINX_TEMPLATE_PATH = new URL('../../deploy/nginx.conf', import.meta.url)

/** Debian's nginx binary (package `nginx`; `.ci/run` installs it when missing). */
export const NGINX_BINARY = '/usr/sbin/nginx'

/** Values for the placeholders of deploy/nginx.conf. */
export interface NginxConfValues {
  /** `{{listen}}`: `port` or `address:port` of the front. */
  listen: string
  /** `{{instance}}`: `host:port` of every instance; the template line is repeated for each. */
  instances: readonly string[]
  /** `{{state_dir}}`: writable directory for nginx's temp files. */
  stateDir: string
  /** `{{log_dir}}`: directory of error.log and access.log. */
  logDir: string
}

const PLACEHOLDER = /\{\{(\w+)\}\}/g
// A value is spliced into nginx syntax: refuse anything that could end a directive or a block.
const SAFE_VALUE = /^[A-Za-z0-9_.:/[\]-]+$/

/**
 * Renders deploy/nginx.conf: replaces `{{listen}}`, `{{state_dir}}` and `{{log_dir}}`, and
 * repeats every line holding `{{instance}}` once per instance, in order.
 *
 * @example
 * renderNginxConf(readFileSync(NGINX_TEMPLATE_PATH, 'utf8'), {
 *   listen: '127.0.0.1:8080', instances: ['127.0.0.1:8401', '127.0.0.1:8402'],
 *   stateDir: '/tmp/x/state', logDir: '/tmp/x/logs',
 * })
 * @throws Error when a value holds characters outside `[A-Za-z0-9_.:/[\]-]`, there is no
 *   instance, or the template has a placeholder this function does not know (or lacks one)
 */
export function renderNginxConf(template: string, values: NginxConfValues): string {
  const scalars: Record<string, string> = {
    listen: values.listen,
    state_dir: values.stateDir,
    log_dir: values.logDir,
  }
  if (values.instances.length === 0) throw new Error('nginx: at least one instance is needed')
  for (const value of [...Object.values(scalars), ...values.instances]) {
    if (!SAFE_VALUE.test(value)) throw new Error(`nginx: unsafe value ${JSON.stringify(value)}`)
  }
  const seen = new Set<string>()
  const lines = template.split('\n').flatMap((line) => {
    // Placeholders named in comments are documentation, not slots.
    const code = line.replace(/#.*$/, '')
    const names = [...code.matchAll(PLACEHOLDER)].map((m) => m[1] as string)
    for (const name of names) {
      if (name !== 'instance' && !(name in scalars)) {
        throw new Error(`nginx: unknown placeholder {{${name}}} in the template`)
      }
      seen.add(name)
    }
    if (names.length === 0) return [line]
    const fill = (instance?: string) =>
      line.replace(PLACEHOLDER, (whole, name: string) => {
        if (name === 'instance') return instance ?? whole
        return scalars[name] ?? whole
      })
    return names.includes('instance') ? values.instances.map(fill) : [fill()]
  })
  for (const name of ['instance', ...Object.keys(scalars)]) {
    if (!seen.has(name)) throw new Error(`nginx: the template has no {{${name}}}`)
  }
  return lines.join('\n')
}

/** A running nginx on a rendered deploy/nginx.conf. */
export interface Nginx {
  /** `http://127.0.0.1:<port>`: the front. */
  url: string
  port: number
  /** Directory of nginx.conf, logs/ and state/ (temp files). */
  dir: string
  /** The rendered configuration file. */
  confPath: string
  /** Master process. */
  process: Child
  /** Text of logs/error.log (empty when absent). */
  errorLog(): string
  /** Text of logs/access.log (empty when absent). */
  accessLog(): string
  /**
   * Graceful stop (SIGQUIT), then fast (SIGTERM) and SIGKILL if it lingers; deletes `dir` when
   * startNginx created it. Idempotent.
   */
  stop(): Promise<void>
}

/** Options of {@link startNginx}. */
export interface StartNginxOptions {
  /** `host:port` of each upstream instance. */
  instances: readonly string[]
  /** Front port; a free one by default. */
  port?: number
  /** Front address; default `127.0.0.1`. */
  host?: string
  /** Working directory (conf, logs, temp files); a fresh temp directory by default. */
  dir?: string
  /** The template; default deploy/nginx.conf. */
  template?: string
}

/**
 * Renders deploy/nginx.conf and runs Debian's nginx on it in the foreground:
 * `nginx -p <dir> -c <dir>/nginx.conf -e <dir>/logs/error.log -g 'daemon off; pid <dir>/nginx.pid;'`.
 * Every file it writes is under `dir` (nothing under /etc/nginx, /var or /run); started as root,
 * its workers run as the template's `user` (www-data), so `dir` is made traversable for them.
 * Resolves once the front accepts TCP connections.
 *
 * @example
 * const nginx = await startNginx({ instances: ['127.0.0.1:8401', '127.0.0.1:8402'] })
 * await fetch(`${nginx.url}/health`)
 * await nginx.stop()
 *
 * @throws Error when nginx is not installed, rejects the configuration or does not listen within
 *   10 s (the message holds its error log)
 */
export async function startNginx(options: StartNginxOptions): Promise<Nginx> {
  if (!existsSync(NGINX_BINARY)) {
    throw new Error(
      `${NGINX_BINARY} is missing: install Debian's nginx (npm test runs scripts/system-packages.sh, which installs it as root)`,
    )
  }
  const host = options.host ?? '127.0.0.1'
  const port = options.port ?? (await freePort(host))
  const ownsDir = options.dir === undefined
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'payload-nginx-'))
  mkdirSync(dir, { recursive: true })
  // Workers run as www-data when the master is root: they must reach state/ (the caller's parent
  // directories too). nginx creates the temp directories inside and gives them to that user.
  chmodSync(dir, 0o755)
  const logDir = join(dir, 'logs')
  const stateDir = join(dir, 'state')
  mkdirSync(logDir, { recursive: true })
  mkdirSync(stateDir, { recursive: true })
  const confPath = join(dir, 'nginx.conf')
  const template = options.template ?? readFileSync(NGINX_TEMPLATE_PATH, 'utf8')
  writeFileSync(
    confPath,
    renderNginxConf(template, {
      listen: `${host}:${port}`,
      instances: options.instances,
      stateDir,
      logDir,
    }),
  )
  const errorLogPath = join(logDir, 'error.log')
  const child = spawnChild(
    NGINX_BINARY,
    ['-p', dir, '-c', confPath, '-e', errorLogPath, '-g', `daemon off; pid ${dir}/nginx.pid;`],
    { env: { PATH: process.env.PATH }, logFile: join(logDir, 'stdout.log') },
  )
  const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '')
  const errorLog = () => read(errorLogPath)
  const stop = async () => {
    // Graceful first (in-flight requests finish); a master killed outright would orphan workers.
    child.kill('SIGQUIT')
    if (!(await Promise.race([child.exited, sleep(5_000, false, { ref: false })]))) {
      await child.stop({ signal: 'SIGTERM', graceMs: 2_000 })
    }
    // A directory it made itself goes with it; a caller's (the cluster's logs) stays.
    if (ownsDir) rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitFor('nginx', () => accepts(host, port), { timeoutMs: 10_000, alive: child.running })
  } catch (error) {
    await child.stop({ signal: 'SIGTERM', graceMs: 2_000 })
    const message = `${(error as Error).message}\n${errorLog().slice(-2_000)}${child.logTail()}`
    if (ownsDir) rmSync(dir, { recursive: true, force: true })
    throw new Error(message)
  }
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    dir,
    confPath,
    process: child,
    errorLog,
    accessLog: () => read(join(logDir, 'access.log')),
    stop,
  }
}

/** True when a TCP connection to `host:port` opens. */
export function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
