import { z } from 'zod'

/** Body of GET /health. */
export const healthSchema = z
  .object({
    status: z
      .enum(['ok', 'degraded'])
      .describe('`degraded` still answers 200: the process serves, but see `reasons`.'),
    devnet: z
      .string()
      .optional()
      .describe(
        'Present only on a local devnet (X402_DEVNET=on: `npm run dev`, the tests): its payment networks are simulated and no real money moves.',
      ),
    reasons: z.array(z.string()).describe('Why the status is `degraded`; empty when `ok`.'),
    checks: z.object({
      facilitator: z.object({
        status: z
          .enum(['ok', 'degraded', 'unavailable', 'unconfigured'])
          .describe(
            '`unconfigured`: no facilitator URL, every paid call answers 503 (fail-closed). `unavailable`: no facilitator serves, paid calls answer 503. `degraded`: paid calls are served, but a facilitator is down, refuses our credentials, or failed recently.',
          ),
        last_ok_at: z
          .string()
          .optional()
          .describe('ISO 8601 time of the last successful `/supported` load.'),
        facilitators: z
          .array(
            z.object({
              host: z.string().describe("Host of the facilitator's URL (never its path or a key)."),
              auth: z.enum(['none', 'cdp', 'payai']).describe('Its FACILITATOR_AUTH mode.'),
              status: z
                .enum(['ok', 'degraded', 'down', 'unauthorized', 'unknown'])
                .describe(
                  '`down`: its last call failed, calls go to the next facilitator offering the rail until it answers again. `unauthorized`: it answered 401 or 403. `degraded`: it answers, but some of its recent calls failed or timed out. `unknown`: not asked yet.',
                ),
              networks: z.array(z.string()).describe('CAIP-2 networks its `/supported` lists.'),
              last_ok_at: z
                .string()
                .optional()
                .describe('ISO 8601 time of its last successful call.'),
              reason: z
                .string()
                .optional()
                .describe(
                  'Short reason of its last failure (`ECONNREFUSED`, `timeout`, `HTTP 503`).',
                ),
              recent: z
                .object({
                  window_s: z.number().int(),
                  calls: z.number().int(),
                  failures: z.number().int().describe('Calls that failed, timeouts included.'),
                  timeouts: z.number().int(),
                })
                .describe(
                  'Its verify, settle and `/supported` calls in the last `window_s` seconds.',
                ),
            }),
          )
          .describe('Each configured facilitator, in order of preference (FACILITATOR_URL).'),
      }),
      rails: z.object({
        status: z.enum(['ok', 'degraded']),
        networks: z
          .array(
            z.object({
              id: z.enum(['evm', 'solana']),
              network: z.string().describe('CAIP-2 network identifier.'),
              live: z.boolean().describe('A facilitator settles this rail right now.'),
              facilitator: z
                .string()
                .optional()
                .describe('Host of the facilitator that serves this rail now.'),
            }),
          )
          .describe('Configured rails in advertising order.'),
      }),
      telemetry: z
        .object({ status: z.enum(['ok', 'degraded', 'not_configured']) })
        .catchall(z.unknown())
        .describe('Telemetry store state (backend, buffered and dropped event counts).'),
      redis: z
        .object({
          status: z
            .enum(['ok', 'unavailable', 'not_configured'])
            .describe(
              '`unavailable`: paid calls answer 503 guard_unavailable (fail-closed); free endpoints serve. `not_configured`: no REDIS_URL, in-process guard (one instance only).',
            ),
          last_ok_at: z
            .string()
            .optional()
            .describe('ISO 8601 time the connection last became ready.'),
          reason: z
            .string()
            .optional()
            .describe('Short reason of the last connection failure (an error code).'),
        })
        .describe('The shared Redis of the duplicate-settlement guard and idempotent replays.'),
      channels: z
        .object({
          status: z
            .enum(['ok', 'degraded', 'not_offered', 'not_configured'])
            .describe(
              '`not_offered`: BATCH_SETTLEMENT is on but the scheme is not in the 402s (`reason`); `degraded`: claims fail or fall behind; `not_configured`: BATCH_SETTLEMENT off or no Base rail.',
            ),
          reason: z.string().optional().describe('Why it is not offered, or degraded.'),
          storage: z.enum(['redis', 'file']).optional().describe('Where channel state lives.'),
          manager: z
            .enum(['holder', 'standby'])
            .optional()
            .describe('`holder`: this instance claims, settles and refunds (one at a time).'),
          channels: z.number().int().optional().describe('Open channels in the store.'),
          unclaimed_atomic: z
            .string()
            .optional()
            .describe('USDC accepted by voucher and not yet claimed on chain, atomic units.'),
          oldest_unclaimed_s: z
            .number()
            .int()
            .optional()
            .describe('Age of the oldest voucher not yet claimed, in seconds.'),
          last_claim_at: z.string().optional().describe('ISO 8601 time of the last claim sent.'),
        })
        .describe('Prepaid channels (x402 batch-settlement) on Base: src/channels/.'),
    }),
  })
  .describe('Health for load balancers: always 200 while the process serves.')

export type Health = z.infer<typeof healthSchema>
