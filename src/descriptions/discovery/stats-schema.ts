import { z } from 'zod'

const count = z.number().int().min(0)

const money = z
  .object({
    atomic: z
      .string()
      .regex(/^[0-9]+$/)
      .describe('Atomic USDC units (6 decimals).'),
    usdc: z.string().describe('Exact USDC decimal string, trailing zeros trimmed; "0" when zero.'),
  })
  .describe('An amount of USDC in both notations.')

/**
 * Body of GET /stats (SPEC 2.3), as the OpenAPI document describes it: aggregate figures only, no
 * payer or transaction identifiers. The telemetry module produces it from rollups (the 24-hour
 * and 7-day windows are exact to the UTC hour); this schema is checked against its real output in
 * the tests.
 */
export const statsSchema = z
  .object({
    paid_calls: count.describe('Verified paid attempts.'),
    successful_paid_calls: count.describe('Paid calls that settled and answered 200.'),
    unique_payers: count.describe('Distinct payers among settled calls.'),
    repeat_payers: count.describe('Payers with two or more settled calls.'),
    repeat_paid_calls: count.describe("Settled calls after each payer's first."),
    repeat_call_rate: z
      .number()
      .min(0)
      .max(1)
      .describe('repeat_paid_calls / successful_paid_calls; 0 without settled calls.'),
    revenue: z
      .object({
        lifetime: money.describe('Every settled call since the service first recorded one.'),
        last_24h: money.describe(
          'Settled in the current UTC hour so far and the 23 whole hours before it: exact to the hour, not the millisecond (between 23 and 24 hours of calls).',
        ),
        last_7d: money.describe(
          'Settled in the current UTC hour so far and the 167 whole hours before it: exact to the hour, not the millisecond.',
        ),
      })
      .describe(
        'Sums of settled calls in atomic USDC. The windows and `daily` are sums of the same hourly rollups, so they always agree.',
      ),
    networks: z
      .record(z.string(), z.object({ calls: count, revenue: money }))
      .describe('Settled calls and revenue per CAIP-2 network with at least one settled call.'),
    tools: z
      .record(z.string(), z.object({ calls: count }))
      .describe('Settled calls per tool id with at least one settled call.'),
    channels: z
      .object({
        calls: count.describe(
          'Successful paid calls paid by a voucher of a prepaid channel, counted when the voucher is accepted; included in successful_paid_calls.',
        ),
        revenue: money.describe('Their revenue; included in revenue.lifetime.'),
        share_of_calls: z
          .number()
          .min(0)
          .max(1)
          .describe('channels.calls / successful_paid_calls; 0 without settled calls.'),
      })
      .describe(
        'Paid usage through prepaid channels (x402 scheme `batch-settlement`: one deposit into an escrow, then a voucher per call), lifetime and in aggregate only: nothing per payer or per channel.',
      ),
    daily: z
      .array(
        z.object({
          date: z
            .string()
            .regex(/^\d{4}-\d{2}-\d{2}$/)
            .describe('UTC date.'),
          calls: count,
          revenue: money,
        }),
      )
      .length(7)
      .describe(
        'Settled calls and revenue per UTC calendar day: the last 7 days, oldest first, ending today (00:00 UTC to now), zero-filled.',
      ),
    generated_at: z.string().describe('ISO 8601 time the figures were computed.'),
    window: z
      .object({
        last_24h: z.string(),
        last_7d: z.string(),
        daily: z.string(),
        cache_seconds: z.number().describe('How long the figures are cached, in seconds.'),
      })
      .describe('Plain-language definitions of the windows, as computed.'),
  })
  .describe('Aggregate paid-usage telemetry.')
