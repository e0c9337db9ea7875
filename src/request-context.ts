import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * The request id of the request being served, carried through every `await` of its handling
 * (AsyncLocalStorage), so that the logger and the failure envelope find it without every layer
 * passing it on: the payment gate, the runner and the MCP SDK's handlers never see a request
 * object. Set by the HTTP layer once per request (src/http/request-id.ts).
 */
const storage = new AsyncLocalStorage<string>()

/**
 * Runs `fn` with `id` as the current request id; everything `fn` starts, synchronously or after
 * any number of awaits, sees it through {@link currentRequestId}.
 *
 * @example
 * await withRequestId('3f2c…', () => next())
 */
export function withRequestId<T>(id: string, fn: () => T): T {
  return storage.run(id, fn)
}

/**
 * The id of the request being served; `undefined` outside a request (start-up, timers, tests that
 * call a layer directly).
 *
 * @example
 * logger.info({ request_id: currentRequestId() }, '…')
 */
export function currentRequestId(): string | undefined {
  return storage.getStore()
}
