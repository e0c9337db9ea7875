import { describe, expect, it } from 'vitest'
import { SERVICE_ERROR_CODES } from '../descriptions/error-codes.js'
import {
  FacilitatorUnavailableError,
  InvalidInputError,
  InvalidJsonError,
  ShuttingDownError,
} from '../payment/errors.js'
import { OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import { TelemetryUnavailableError } from '../telemetry/types.js'
import { ToolError } from '../tools/types.js'
import { describeFailure } from './describe.js'
import { MethodNotAllowedError, NotFoundError, PayloadTooLargeError } from './errors.js'

describe('describeFailure', () => {
  it('gives each failure kind its code, the status of the table and its extras', () => {
    expect(describeFailure(new InvalidJsonError('Unexpected token'))).toEqual({
      status: 400,
      body: { ok: false, error: 'Unexpected token', code: 'invalid_json' },
    })
    expect(describeFailure(new InvalidInputError([{ path: '/a', message: 'bad' }]))).toEqual({
      status: 400,
      body: {
        ok: false,
        error: 'Invalid request: /a bad',
        code: 'invalid_request',
        issues: [{ path: '/a', message: 'bad' }],
      },
    })
    expect(describeFailure(new ToolError('invalid_hex', 'odd', { offset: 3 }))).toEqual({
      status: 400,
      body: {
        ok: false,
        error: 'odd; nothing was charged',
        code: 'invalid_hex',
        details: { offset: 3 },
      },
    })
    expect(describeFailure(new PayloadTooLargeError())).toEqual({
      status: 413,
      body: { ok: false, error: 'The body exceeds 1 MiB', code: 'payload_too_large' },
    })
    expect(describeFailure(new NotFoundError())).toEqual({
      status: 404,
      body: { ok: false, error: 'Not found', code: 'not_found' },
    })
    expect(describeFailure(new MethodNotAllowedError('PUT', '/health', ['GET', 'HEAD']))).toEqual({
      status: 405,
      body: {
        ok: false,
        error: 'PUT is not allowed on /health; use GET, HEAD',
        code: 'method_not_allowed',
      },
      allow: ['GET', 'HEAD'],
    })
    for (const error of [
      new FacilitatorUnavailableError('down'),
      new TelemetryUnavailableError(),
    ]) {
      expect(describeFailure(error)).toEqual({
        status: 503,
        body: { ok: false, error: error.message, code: error.code },
        retryAfterSeconds: 5,
      })
    }
  })

  it('maps the runner and shutdown failures: tool_timeout 400, overloaded and shutting_down 503', () => {
    expect(describeFailure(new ToolTimeoutError(2000))).toEqual({
      status: 400,
      body: {
        ok: false,
        code: 'tool_timeout',
        error:
          'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
      },
    })
    expect(describeFailure(new OverloadedError(3))).toEqual({
      status: 503,
      body: {
        ok: false,
        code: 'overloaded',
        error: 'The service is at capacity; nothing was verified, run or charged. Retry shortly',
      },
      retryAfterSeconds: 3,
    })
    expect(describeFailure(new ShuttingDownError())).toEqual({
      status: 503,
      body: {
        ok: false,
        code: 'shutting_down',
        error: 'The service is shutting down; nothing was run or charged. Retry',
      },
      retryAfterSeconds: 1,
    })
  })

  it('answers anything else with internal_error, never with its message', () => {
    expect(describeFailure(new Error('secret body text'))).toEqual({
      status: 500,
      body: { ok: false, error: 'Internal error; nothing was charged', code: 'internal_error' },
    })
    expect(SERVICE_ERROR_CODES.internal_error.status).toBe(500)
  })
})
