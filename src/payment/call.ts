import type { SettleResponse } from '@x402/core/types'
import type { FacilitatorLink, LiveState } from '../facilitators/link.js'
import type { Receipts } from '../receipts/index.js'
import type { CheckedInput } from '../runner/check.js'
import type { JsonResult } from '../runner/json-result.js'
import type { Admission, ToolRunner } from '../runner/runner.js'
import type { QuestionOf, SettlementJudge } from '../settlement/types.js'
import type { SettlementLedger } from '../telemetry/ledger.js'
import type { ToolEnv } from '../tools/types.js'
import type { CallFingerprint, SettlementGuard } from './guard.js'
import type { Offer } from './offer.js'
import type { CallOutcome, Outcomes } from './outcome.js'
import type { PresentedPayment } from './presented.js'
import type { PaidCall } from './types.js'
import type { ValidVerdict } from './verify.js'

/** What the steps of the gate are built with (gate.ts assembles it once). */
export interface GateParts {
  link: FacilitatorLink
  guard: SettlementGuard
  runner: ToolRunner
  /** The keyed hash of a payer address that guard records keep. */
  payerHash: (payer: string) => string
  /** Replays of one settled payment, in all (REPLAY_LIMIT). */
  replayLimit: number
  /** The tools' clock, read here and passed to the worker with each call. */
  env: ToolEnv
  /** Whether a settlement may start now (false late in a shutdown). */
  canSettle: () => boolean
  outcomes: Outcomes
  receipts?: Receipts
  /** The payments' clock, in epoch milliseconds. */
  now: () => number
  /** The write-ahead settlement ledger; absent: no intents are written. */
  ledger?: SettlementLedger
  /** How long a call holds its intent from the resolver, in milliseconds (its run and settle's worst). */
  ledgerHoldMs: number
  /** Reads the chains to judge a settlement in doubt; absent: the facilitator is asked again. */
  judge?: SettlementJudge
  /** The question the judge is asked of a payment. */
  questionOf?: QuestionOf
}

/** What the steps of one paid call share once its payment is read and its input checked. */
export interface PaidContext {
  call: PaidCall
  state: LiveState
  offer: Offer
  presented: PresentedPayment
  checked: CheckedInput
  /** The tool and the SHA-256 of its checked input: what a replay must match. */
  fp: CallFingerprint
  /** Its guard keys: its `payment-identifier` id's first, if any, then its payment's own. */
  keys: string[]
  /** How long its payment's own key stays on record once used, in milliseconds. */
  retentionMs: number
  /** Its place in the tool runner, taken before verify (nothing reserved). */
  admission: Admission
  /**
   * The facilitator's verdict, when a verify earned its input check the paid lane (paid-lane.ts):
   * the verify step takes it instead of asking again, and records the `verified` event then.
   */
  verdict?: ValidVerdict
  outcome: CallOutcome
}

/** A tool run: its result and the clock it was computed with (Unix seconds). */
export interface Ran {
  result: JsonResult
  nowSeconds: number
}

/** A paid call's answer before its receipt: the run, the settlement, and whether it is a replay. */
export interface Answer extends Ran {
  settlement: SettleResponse
  replayed?: true
}
