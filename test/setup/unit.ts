import childProcess from 'node:child_process'
import dgram from 'node:dgram'
import { syncBuiltinESMExports } from 'node:module'
import net from 'node:net'

// The `unit` project's rule, enforced in every unit test file's process: no child process, no
// socket (no server, no client, not even to loopback). A test that needs one is misfiled: name it
// `*.e2e.test.ts` (the devnet, the machine's PostgreSQL and Redis, servers on loopback) or
// `*.system.test.ts` (podman, nginx, Chromium, servers the test starts). docs/development.md, "Tests".
// Worker threads (the tool runner's piscina pools) stay allowed: they are neither.

const RULE =
  'a unit test starts no child process and opens no socket: rename this file *.e2e.test.ts ' +
  '(devnet, loopback servers, the machine’s PostgreSQL or Redis) or *.system.test.ts ' +
  '(podman, nginx, Chromium, servers it starts); docs/development.md, "Tests"'

/** A stand-in that throws, naming what was called and the rule. */
function refused(what: string) {
  return function refusedInUnitTest(): never {
    throw new Error(`${what} in the unit project: ${RULE}`)
  }
}

const CHILD_PROCESS = [
  'spawn',
  'spawnSync',
  'exec',
  'execSync',
  'execFile',
  'execFileSync',
  'fork',
] as const

const mutable = childProcess as unknown as Record<string, unknown>
for (const name of CHILD_PROCESS) mutable[name] = refused(`child_process.${name}`)
net.Server.prototype.listen = refused('net.Server#listen (a server)')
net.Socket.prototype.connect = refused('net.Socket#connect (a connection)')
dgram.Socket.prototype.bind = refused('dgram.Socket#bind')
dgram.Socket.prototype.send = refused('dgram.Socket#send')
// ES module imports of node:child_process see the replacements too.
syncBuiltinESMExports()
