/**
 * Largest request head (request line plus headers) the HTTP server accepts: 128 KiB. Node's
 * default of 16 KiB answers 431 with an empty body before our code runs, so a client sending a
 * large PAYMENT-SIGNATURE would get no envelope and no reason; with this room the HTTP adapter
 * refuses an over-long payment itself (402 `invalid_payment`, see MAX_PAYMENT_BYTES).
 */
export const MAX_HEADER_BYTES = 128 * 1024

/**
 * The node:http options every `serve(...)` of the service passes as `serverOptions` (production,
 * dev demo, tests, benchmarks), so that all of them refuse the same requests.
 *
 * @example serve({ fetch: app.fetch, port: 8402, serverOptions: NODE_SERVER_OPTIONS })
 */
export const NODE_SERVER_OPTIONS = { maxHeaderSize: MAX_HEADER_BYTES } as const
