/**
 * Operator metrics: a Prometheus registry per service instance, the metrics every layer reports
 * into (the layers expose hooks; src/service.ts connects them here), the counting of the payment
 * gate's events and notes, and `/metrics`. Imports nothing of ours. What to watch and what each alert means: docs/operations.md.
 */
export { type CountedNote, type CountedPayment, countNote, countPayment } from './counting.js'
export { createMetricsApp, metricsEndpoint } from './endpoint.js'
export { facilitatorHost, timedFacilitator } from './facilitator-client.js'
export {
  createMetrics,
  type FacilitatorOperation,
  type FacilitatorResult,
  type FacilitatorSample,
  type GaugeSources,
  MAX_LABEL_VALUES,
  type Metrics,
  type MetricsOptions,
  OTHER,
  type PaymentMetricOutcome,
  type PaymentSample,
  type PoolRejectionReason,
  type RedisCommandSample,
  type TelemetryWriteSample,
  type ToolRunOutcome,
  type ToolRunSample,
} from './metrics.js'
