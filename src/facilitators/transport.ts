import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { FacilitatorResponseError, FacilitatorTimeoutError } from '@x402/core/types'

/** Largest facilitator answer read, in bytes (1 MiB): a VerifyResponse or SettleResponse is < 4 KiB. */
export const MAX_FACILITATOR_ANSWER_BYTES = 1024 * 1024

/**
 * Idle kept-alive connections are closed after this many milliseconds (4 s), before the usual 5 s
 * of servers (Node's own default), so that a request is not sent on a connection the facilitator is
 * closing: a settle lost that way could not be re-sent (src/facilitators/router.ts).
 */
export const IDLE_CONNECTION_MS = 4_000

/** A facilitator's answer: its status, its body as text and its headers. */
export interface FacilitatorAnswer {
  status: number
  text: string
  /** A response header (name lower-case), if present. */
  header(name: string): string | undefined
}

// One pool of kept-alive connections per scheme, shared by every facilitator client.
const agents = {
  'http:': new HttpAgent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  'https:': new HttpsAgent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
}

/**
 * POSTs a JSON body to a facilitator with node:http or node:https over kept-alive connections, and
 * reads its whole answer, within `timeoutMs` from the call to the last byte of the answer.
 *
 * Its failures are those of `fetch`, so that the SDK's errors and our classifiers
 * (failures.ts: `neverReached`, `failureKind`) read them alike: a connection that could not be
 * made, or broke, is `TypeError: fetch failed` with the socket's error (its `code`, e.g.
 * `ECONNREFUSED`) as `cause`; the deadline is the SDK's `FacilitatorTimeoutError`. Redirects are
 * not followed (a facilitator does not send any; the answer's 3xx is its status).
 *
 * @param operation - `verify` or `settle`: named by a timeout
 * @throws {TypeError} `fetch failed`, with the socket error as `cause`
 * @throws {FacilitatorTimeoutError} past `timeoutMs`
 * @throws {FacilitatorResponseError} an answer larger than {@link MAX_FACILITATOR_ANSWER_BYTES}
 * @example
 * const answer = await postJson(new URL('https://x402.example/settle'), body, {}, 4000, 'settle')
 * answer.status // 200
 */
export function postJson(
  url: URL,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  operation: 'verify' | 'settle',
): Promise<FacilitatorAnswer> {
  return new Promise((resolve, reject) => {
    let done = false
    const finish = (error: Error | undefined, answer?: FacilitatorAnswer) => {
      if (done) return
      done = true
      clearTimeout(deadline)
      if (error) reject(error)
      else resolve(answer as FacilitatorAnswer)
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const request = send(
      url,
      {
        method: 'POST',
        agent: url.protocol === 'https:' ? agents['https:'] : agents['http:'],
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > MAX_FACILITATOR_ANSWER_BYTES) {
            finish(
              new FacilitatorResponseError(
                `Facilitator ${operation} answered more than ${MAX_FACILITATOR_ANSWER_BYTES} bytes`,
              ),
            )
            request.destroy()
            return
          }
          chunks.push(chunk)
        })
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          finish(undefined, {
            status: response.statusCode ?? 0,
            text,
            header: (name) => {
              const value = response.headers[name]
              return Array.isArray(value) ? value.join(', ') : value
            },
          })
        })
        response.on('error', (error) => finish(new TypeError('fetch failed', { cause: error })))
      },
    )
    const deadline = setTimeout(() => {
      finish(new FacilitatorTimeoutError(operation, timeoutMs))
      request.destroy()
    }, timeoutMs)
    request.on('error', (error) => finish(new TypeError('fetch failed', { cause: error })))
    request.end(body)
  })
}
