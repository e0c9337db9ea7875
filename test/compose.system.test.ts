import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderNginxConf } from '../src/devnet/nginx.js'
import { INSTANCES, REQUIRED, ROOT, read, run } from './helpers/compose.js'
import { podman, podmanUnavailable } from './helpers/podman.js'

// deploy/compose.yaml's programs: its nginx entrypoint must render deploy/nginx.conf exactly as
// renderNginxConf does, and where podman-compose is installed, its dry run must turn the file into
// the expected podman commands. The file itself, without a container engine: compose.test.ts.

describe('deploy/nginx-entrypoint.sh', () => {
  const upstreams = 'app1:8402 app2:8402 app3:8402'
  const render = (env: Record<string, string>) =>
    run('sh', ['deploy/nginx-entrypoint.sh'], {
      NGINX_RENDER_ONLY: '1',
      NGINX_TEMPLATE: 'deploy/nginx.conf',
      ...env,
    })

  it('renders deploy/nginx.conf exactly as renderNginxConf does', async () => {
    const expected = renderNginxConf(read('deploy/nginx.conf'), {
      listen: '80',
      instances: upstreams.split(' '),
      stateDir: '/var/cache/nginx',
      logDir: '/var/log/nginx',
    })
    expect(await render({ NGINX_UPSTREAMS: upstreams })).toEqual({
      code: 0,
      stdout: expected,
      stderr: '',
    })
    const custom = renderNginxConf(read('deploy/nginx.conf'), {
      listen: '127.0.0.1:8080',
      instances: ['[fd00::1]:8402'],
      stateDir: '/tmp/state',
      logDir: '/tmp/logs',
    })
    expect(
      await render({
        NGINX_UPSTREAMS: '[fd00::1]:8402',
        NGINX_LISTEN: '127.0.0.1:8080',
        NGINX_STATE_DIR: '/tmp/state',
        NGINX_LOG_DIR: '/tmp/logs',
      }),
    ).toEqual({ code: 0, stdout: custom, stderr: '' })
  })

  it('refuses values that could break out of a directive, and a missing upstream list', async () => {
    expect(await render({ NGINX_UPSTREAMS: 'app1:8402;include /etc/passwd' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'nginx-entrypoint: unsafe value "app1:8402;include"\n',
    })
    const missing = await render({})
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain('NGINX_UPSTREAMS must list host:port of every instance')
  })
})

const noDryRun =
  podmanUnavailable() ??
  (existsSync('/usr/bin/podman-compose') ? undefined : 'apt-get install podman-compose')
if (noDryRun)
  console.warn(`test/compose.system.test.ts: podman-compose dry run skipped: ${noDryRun}`)

describe.skipIf(noDryRun)('podman-compose', () => {
  it('turns the file into six containers with the shared environment (dry run)', async () => {
    const project = `payload-tools-dry-${process.pid}`
    try {
      const result = await run(
        'podman-compose',
        ['-p', project, '-f', 'deploy/compose.yaml', '--dry-run', 'up', '-d'],
        REQUIRED,
      )
      expect(result.code, result.stderr).toBe(0)
      const runs = result.stdout.split('\n').filter((line) => line.startsWith('podman run '))
      const names = runs.map((line) => /--name=(\S+)/.exec(line)?.[1])
      expect(names.sort()).toEqual(
        ['app1', 'app2', 'app3', 'nginx', 'postgres', 'redis'].map((s) => `${project}_${s}_1`),
      )
      for (const line of runs) expect(line).not.toContain('${')
      for (const name of INSTANCES) {
        const line = runs.find((l) => l.includes(`--name=${project}_${name}_1 `)) ?? ''
        expect(line).toContain(`--env-file ${ROOT}deploy/.env`)
        expect(line).toContain(`-e TELEMETRY_SALT=${REQUIRED.TELEMETRY_SALT}`)
        expect(line).toContain(`-e TRUST_PROXY_HOPS=1`)
        expect(line).toContain(`--network-alias ${name}`)
        expect(line).toMatch(/ payload-tools:latest$/)
      }
    } finally {
      // Its dry run still creates the project's network and volumes.
      await podman(['network', 'rm', `${project}_default`])
      await podman(['volume', 'rm', `${project}_postgres-data`, `${project}_redis-data`])
    }
  })
})
