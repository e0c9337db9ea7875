import { createServer } from 'node:net'

/**
 * Asks the OS for a TCP port that is free right now on `host`, by listening on port 0 and closing.
 *
 * Another process may take the port before the caller binds it, so callers that spawn a child on
 * it (anvil, a validator) should retry once with a fresh port if the child fails to bind.
 *
 * @example
 * const port = await freePort() // e.g. 41237
 *
 * @param host - interface to probe, default `127.0.0.1`
 * @returns a port number in the ephemeral range
 * @throws the listen error if the OS refuses to bind
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close((err) => (err ? reject(err) : resolve(port)))
    })
  })
}
