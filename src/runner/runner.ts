import { fileURLToPath } from 'node:url'
import { Piscina } from 'piscina'
import { logger } from '../logger.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import type { CheckedInput } from './check.js'
import { checkToolBody, readCheckReply, readVerdict } from './check.js'
import { OverloadedError, ToolTimeoutError } from './errors.js'
import { JsonResult } from './json-result.js'
import { type CheckLane, createCheckLane } from './lane.js'
import { type MessagesOutcome, readMessages } from './messages.js'
import { runToolTask } from './run-task.js'
import {
  type CheckOutcome,
  type CheckReply,
  type CheckTask,
  type CheckVerdict,
  type FieldsOutcome,
  PING,
  type TaskOutcome,
  type ToolTask,
  type WorkerTask,
} from './task.js'

/** Options of {@link createToolRunner}. */
export interface ToolRunnerOptions {
  /** Worker threads, each running one tool call at a time (TOOL_WORKERS). */
  workers: number
  /** Time budget of one call, from its start on a worker, in milliseconds (TOOL_TIMEOUT_MS). */
  timeoutMs: number
  /** Calls that may wait for a worker beyond one per worker (TOOL_QUEUE_LIMIT); see {@link ToolRunner.admit}. */
  queueLimit: number
  /** A module exporting `catalog` to run instead of the tool catalogue (unit tests only). */
  catalog?: URL
  /**
   * Bodies of at most this many bytes are checked on the calling thread, larger ones on a checker
   * thread; default {@link INLINE_CHECK_BYTES}. 0 sends every body to a checker (tests).
   */
  inlineCheckBytes?: number
  /**
   * A call of an inline tool (`ToolDefinition.inline`) whose checked input is at most this many
   * bytes runs on the calling thread; default {@link INLINE_RUN_BYTES}. 0 runs every call on a
   * worker (tests).
   */
  inlineRunBytes?: number
  /** Clock of the admission's queue grace, in milliseconds; default `performance.now` (tests). */
  now?: () => number
  /** Told of every run and every refusal (the operator metrics); absent: nobody is. */
  observer?: RunnerObserver
}

/**
 * What the runner reports as it works. `ran`: a call ended on a worker (or on the calling thread,
 * {@link INLINE_RUN_BYTES}), `seconds` from its start there (its wait in the queue excluded);
 * `outcome` `ok`, `tool_error` (the tool's own refusal), `timeout` (the budget ran out) or
 * `failed` (a crash or bug). `rejected`: a call was refused with `overloaded` at admission (pool
 * full) or in the queue (past its deadline).
 */
export interface RunnerObserver {
  ran(run: {
    tool: string
    outcome: 'ok' | 'tool_error' | 'timeout' | 'failed'
    seconds: number
  }): void
  rejected(reason: 'admission' | 'queue'): void
}

/**
 * One call let in by {@link ToolRunner.admit}; `run` may be called once. Nothing is held between
 * admission and run: a call spends most of its life on I/O (verify with the facilitator, the
 * telemetry write), during which it must not keep a worker's place.
 */
export interface Admission {
  /**
   * Runs the tool on a worker under the time budget; an inline tool's small input at once on the
   * calling thread ({@link INLINE_RUN_BYTES}).
   *
   * @param tool - a catalogue tool (the worker looks it up by `id`)
   * @param input - its checked input ({@link ToolRunner.check}); its bytes are transferred to
   *   the worker, so the caller must not use them afterwards
   * @param nowSeconds - the tools' clock for this call, in Unix seconds
   * @returns the tool result, as the JSON bytes the worker made, with the SHA-256 of its RFC 8785
   *   form
   * @throws {ToolError} the tool's own refusal (same code, message and details), or `tool_failed`
   *   for anything else that went wrong in the worker (a bug, a crash)
   * @throws {ToolTimeoutError} the budget ran out; the worker was terminated and replaced
   * @throws {OverloadedError} (stage `queue`) it waited for a worker past its queue deadline,
   *   {@link worstQueueWaitMs}, and never ran
   */
  run(tool: ToolDefinition, input: CheckedInput, nowSeconds: number): Promise<JsonResult>
}

/**
 * Where a call's input comes from: the raw request body, its buffer transferred to a checker
 * thread. HTTP: the tool's JSON body. MCP: the JSON-RPC body and the id of the `tools/call` whose
 * `arguments` are the input.
 */
export interface InputSource {
  body: Uint8Array
  mcpRequestId?: string | number
  /** The top-level key of the body's object that holds the input (`POST /receipts/verify`). */
  field?: string
}

/**
 * The check task of an input of `tool` (what a checker thread, or the calling thread for a small
 * body, runs: `checkBody` in check.ts); `verdictOnly` makes no RFC 8785 form.
 *
 * @example checkTaskOf('hash', { body }, false) // { kind: 'check', tool: 'hash', body }
 */
export function checkTaskOf(tool: string, source: InputSource, verdictOnly: boolean): CheckTask {
  return {
    kind: 'check',
    tool,
    body: source.body,
    ...(source.mcpRequestId !== undefined ? { mcpRequestId: source.mcpRequestId } : {}),
    ...(source.field !== undefined ? { field: source.field } : {}),
    ...(verdictOnly ? { verdictOnly: true as const } : {}),
  }
}

/**
 * The checker lanes: `paid`, for calls whose payment verified (or is already held as a payment
 * sent to settlement), and `free`, for everything else: the free check of a 402, free endpoints,
 * and the check of a call whose payment is not verified yet.
 */
export type Lane = 'paid' | 'free'

/** What one checker lane is doing. */
export interface LaneStatus {
  /** Its checks and reads in progress or waiting for a thread. */
  checking: number
  /** The tasks it has started on its threads since the runner was created. */
  started: number
}

/** What the runner is doing right now. */
export interface RunnerStatus {
  running: number
  queued: number
  /** Input checks in progress or waiting for a checker thread, both lanes. */
  checking: number
  /** Each lane apart. */
  lanes: Record<Lane, LaneStatus>
  /** Most calls running or queued at once for a new call to be admitted: workers + queue limit. */
  capacity: number
}

/**
 * Runs catalogue tools on a pool of worker threads (piscina) under a time budget, so that no
 * input can hold the service's event loop. Knows nothing of payment: the gate asks
 * {@link admit} before it verifies a payment, then runs the tool with the admission.
 */
export interface ToolRunner {
  /**
   * Parses and checks a call's input: JSON, the tool's schema, its shape check and the RFC 8785
   * form with its SHA-256 (`checkBody` in check.ts). A body of at most
   * {@link INLINE_CHECK_BYTES} is checked on the calling thread; a larger one on a checker thread
   * of its lane (see {@link Lane}; `free` unless the caller asks for `paid`), never on the thread
   * that serves requests. The lanes have threads and queues of their own, so that free work never
   * takes paid capacity; the free lane's threads also run at a lower priority. A check waits at
   * most the tool budget for a thread, then has the tool budget to run.
   *
   * @throws {OverloadedError} when the lane's queue is full, or the check got no thread within
   *   the budget
   * @throws {CheckTimeoutError} when the check ran past its budget (its thread is replaced)
   */
  check(tool: ToolDefinition, source: InputSource, lane?: Lane): Promise<CheckOutcome>
  /**
   * {@link check} without the RFC 8785 form and its SHA-256, on the same thread and lane: whether
   * the input would pass (`valid`) or why not. For the free check of an unpaid body, which nothing
   * runs or fingerprints.
   *
   * @throws as {@link check}
   */
  verdict(tool: ToolDefinition, source: InputSource, lane?: Lane): Promise<CheckVerdict>
  /**
   * Reads top-level fields of a JSON object body on a checker thread of the free lane (their text
   * when strings, the SHA-256 of their RFC 8785 form): how a free endpoint reads a body of up to
   * 1 MiB without parsing it on the thread that serves requests.
   *
   * @throws {OverloadedError} when the free lane is full
   * @throws {CheckTimeoutError} when it outlasts the budget
   */
  fields(body: Uint8Array, names: string[]): Promise<FieldsOutcome>
  /**
   * Reads a JSON-RPC body (MCP) within its bounds, tool arguments aside (`readMessages` in
   * messages.ts): on the calling thread when it is small, else on a thread of `lane`.
   *
   * @throws {OverloadedError} when the lane is full
   * @throws {CheckTimeoutError} when it outlasts the budget
   */
  messages(body: Uint8Array, lane: Lane): Promise<MessagesOutcome>
  /**
   * Lets a call in when the pool has room now: fewer than `workers + queueLimit` calls running or
   * queued for longer than {@link admissionGraceMs} (a queue that drains within it is keeping up,
   * however long it is for an instant). Admission reserves nothing: many calls admitted at once
   * may all be verified and queue up together, so every queued call has a deadline,
   * {@link worstQueueWaitMs}, past which it is refused (`overloaded`, stage `queue`, never run,
   * never settled). The wait for a worker is thus bounded whatever the load, which the paid-call
   * budget check relies on.
   *
   * @throws {OverloadedError} (stage `admission`) when the pool is full (or the runner is closed)
   */
  admit(): Admission
  /**
   * Starts the threads and waits until each has loaded the tools (the first call does it too).
   *
   * @throws {Error} when the worker threads cannot start
   */
  warm(): Promise<void>
  status(): RunnerStatus
  /** Stops the workers; queued calls fail with `tool_failed`. Call after in-flight calls ended. */
  close(): Promise<void>
  readonly options: Readonly<ToolRunnerOptions>
}

/**
 * The queue deadline: the longest a call may wait for a worker, in milliseconds,
 * `max(1, ceil(queueLimit / workers)) × timeoutMs`. It is what a call behind a full queue of
 * calls that each run out their budget would wait; a call still waiting then is refused
 * (`overloaded`), so no call waits longer, however many were admitted at once.
 *
 * @example worstQueueWaitMs({ workers: 2, queueLimit: 8, timeoutMs: 2000 }) // 8000
 */
export function worstQueueWaitMs(
  options: Pick<ToolRunnerOptions, 'workers' | 'queueLimit' | 'timeoutMs'>,
): number {
  return Math.max(1, Math.ceil(options.queueLimit / options.workers)) * options.timeoutMs
}

/**
 * Scheduling priority of the worker threads, above the main thread's (Linux `nice`, per thread,
 * through piscina's optional `@napi-rs/nice`; ignored where it is missing). With as many workers as
 * cores, busy workers would otherwise take the CPU from the event loop that answers /health, the
 * 402s and every reply: the event loop must win.
 */
const WORKER_NICE = 10

/** Input checks that may be in progress or waiting, per checker thread of the paid lane. */
export const CHECKS_PER_THREAD = 16

/**
 * Free checks that may wait for the free lane's one thread. A client's free checks cost it a
 * rate-limit point per 64 KiB before they start; when the lane is full, a 402 is still answered,
 * without its free check.
 */
export const FREE_CHECK_QUEUE = 4

/** `nice` of the free lane's thread: below the tool workers and the paid lane. */
const FREE_LANE_NICE = 19

/**
 * Largest body checked on the calling thread, in bytes (1 KiB): checking so little, even with the
 * costliest json-validate schema that fits in it, costs the main thread less than a checker
 * thread's round trip (messages, transfers, a wake-up) would. Larger bodies, up to the 1 MiB
 * limit, are parsed and checked on a checker thread.
 */
export const INLINE_CHECK_BYTES = 1024

/**
 * Largest checked input of an inline tool (`ToolDefinition.inline`: hash, HMAC, Base64) run on
 * the calling thread, in bytes (1 KiB): its work is linear in so little input, far cheaper than a
 * worker's round trip (messages, a wake-up, the result's copy), and, like a small body's check,
 * needs no budget to stop it.
 */
export const INLINE_RUN_BYTES = 1024

/**
 * How long a queued call may wait for a worker before it counts against the queue limit at
 * admission, in milliseconds: a twentieth of the budget. Under load the results of fast calls
 * wait for the busy main thread too, so a burst of paid calls sees a queue longer than
 * TOOL_QUEUE_LIMIT for a moment that drains at once; a pool held by slow calls has calls waiting
 * longer than this within a twentieth of a budget, and refuses again.
 *
 * @example admissionGraceMs(2000) // 100
 */
export function admissionGraceMs(timeoutMs: number): number {
  return timeoutMs / 20
}

/**
 * Checker threads of the paid lane for `workers` tool workers: half as many, at least one. A check
 * of a body is a parse and a walk, a tool call may use its whole budget. The free lane has one.
 */
export function checkerThreads(workers: number): number {
  return Math.max(1, Math.ceil(workers / 2))
}

/** A call waiting for a worker. */
interface Job {
  task: ToolTask
  resolve(result: JsonResult): void
  reject(error: unknown): void
  /** Its queue deadline ({@link worstQueueWaitMs}), once the workers are ready; cleared when it starts. */
  deadline?: NodeJS.Timeout
  /** When it joined the queue (the runner's clock, ms). */
  queuedAt: number
}

/**
 * The worker module piscina loads, and what it needs to find the tool worker. From `dist/`
 * (`npm start`) that is worker.js itself; from TypeScript sources (vitest, `tsx` in `npm run
 * dev`) it is ts-worker.mjs, which registers tsx in the thread, then imports worker.ts.
 */
function workerModule(): { filename: string; worker?: string } {
  const here = import.meta.url
  if (!here.endsWith('.ts')) return { filename: fileURLToPath(new URL('./worker.js', here)) }
  return {
    filename: fileURLToPath(new URL('./ts-worker.mjs', here)),
    worker: new URL('./worker.ts', here).href,
  }
}

/**
 * Creates the runner. Its threads start with {@link ToolRunner.warm} or the first call, so that
 * assembling a service (tests do it often) starts none.
 *
 * Our own admission and queue in front of piscina, which gets at most one call per worker: the
 * budget must count from the start of a call on a worker (a budget counted in piscina's queue
 * would let a call time out without having run), a full pool must refuse a call before its
 * payment is verified (piscina's `maxQueue` can only refuse at submission, after verify), and a
 * queued call needs a deadline.
 *
 * A call is handed to piscina only when a thread that has loaded the tools is idle, so its budget
 * counts the run, not a thread's start: every thread answers a ping before the first call (the
 * warm-up), and a thread that replaces a stopped or crashed one counts once piscina reports it
 * ready. The pool holds one thread more than `workers`, a standby, so that the call after a
 * timeout does not wait for the replacement to start (about 0.3 s from `dist/`, longer from
 * TypeScript sources).
 *
 * @example
 * const runner = createToolRunner({ workers: 2, timeoutMs: 2000, queueLimit: 8 })
 * const admission = runner.admit()
 * const result = await admission.run(hashTool, { input: 'abc', algorithm: 'SHA-256' }, 1700000000)
 * await runner.close()
 */
export function createToolRunner(options: ToolRunnerOptions): ToolRunner {
  const capacity = options.workers + options.queueLimit
  const retryAfterSeconds = Math.max(1, Math.ceil(options.timeoutMs / 1000))
  const queueDeadlineMs = worstQueueWaitMs(options)
  const graceMs = admissionGraceMs(options.timeoutMs)
  const inlineCheckBytes = options.inlineCheckBytes ?? INLINE_CHECK_BYTES
  const inlineRunBytes = options.inlineRunBytes ?? INLINE_RUN_BYTES
  const now = options.now ?? (() => performance.now())
  const waiting: Job[] = []
  const laneOptions = {
    budgetMs: options.timeoutMs,
    queueMs: options.timeoutMs,
    poolOptions: (threads: number) => poolOptions(threads, options),
    retryAfterSeconds,
  }
  const lanes: Record<Lane, CheckLane> = {
    paid: createCheckLane({
      ...laneOptions,
      name: 'paid',
      threads: checkerThreads(options.workers),
      queueLimit: CHECKS_PER_THREAD * checkerThreads(options.workers),
      nice: WORKER_NICE,
    }),
    free: createCheckLane({
      ...laneOptions,
      name: 'free',
      threads: 1,
      queueLimit: FREE_CHECK_QUEUE,
      nice: FREE_LANE_NICE,
    }),
  }
  let running = 0
  let closed = false
  let pool: Piscina<WorkerTask, TaskOutcome | null> | undefined
  let warming: Promise<void> | undefined
  let warm = false
  /** Thread ids of the threads that have loaded the tools. */
  const ready = new Set<number>()

  function startPool(): Promise<void> {
    const threads = options.workers + 1
    const created = new Piscina<WorkerTask, TaskOutcome | null>(poolOptions(threads, options))
    // A worker that dies between calls: piscina replaces it; an unhandled 'error' would throw.
    created.on('error', (error: unknown) => {
      logger.error(
        { err: error instanceof Error ? error.name : typeof error },
        'tool worker failed',
      )
    })
    // The first threads report 'workerCreate' at once, before they loaded anything: they count
    // after the warm-up. A replacement reports it once it has loaded the tools.
    const starting = new Set<number>()
    created.on('workerCreate', ({ id }: { id: number }) => {
      if (!warm) {
        starting.add(id)
        return
      }
      // After piscina has filed it among its ready threads (it does once this event returns);
      // before that, piscina would queue the call and may hand it to a thread still starting.
      setImmediate(() => {
        if (pool !== created) return
        ready.add(id)
        dispatch()
      })
    })
    pool = created
    // One ping per thread: piscina gives each idle thread one task, and a thread answers once it
    // has loaded the tools.
    return Promise.all(Array.from({ length: threads }, () => created.run(PING))).then(
      () => {
        for (const id of starting) ready.add(id)
        starting.clear()
        warm = true
        for (const job of waiting) startDeadline(job)
        dispatch()
      },
      (error: unknown) => {
        logger.error(
          { err: error instanceof Error ? error.name : typeof error },
          'tool workers failed to start',
        )
        pool = undefined
        warming = undefined
        created.destroy().catch(() => {})
        for (const job of waiting.splice(0)) finishJob(job, failed(job.task.tool, 'WorkerStart'))
        throw error
      },
    )
  }

  /** Starts the tool workers once; a queued call's deadline starts when they are ready. */
  function warmUp(): Promise<void> {
    if (closed) return Promise.resolve()
    warming ??= startPool()
    return warming
  }

  /**
   * A check's reply, read by `read`: on the calling thread for a small body (no await: a 402's
   * check is on the hot path), else on a checker of `lane`.
   */
  function checkWith<T>(
    read: (reply: CheckReply) => T,
    tool: ToolDefinition,
    source: InputSource,
    lane: Lane,
    verdictOnly: boolean,
  ): Promise<T> {
    const task = checkTaskOf(tool.id, source, verdictOnly)
    if (source.body.length <= inlineCheckBytes)
      return Promise.resolve(read(checkToolBody(tool, task)))
    return lanes[lane]
      .run<CheckReply>({ ...task, body: ownBuffer(source.body) })
      .then((reply) => read(reply ?? { status: 'crash', name: 'NoOutcome' }))
  }

  const check = (tool: ToolDefinition, source: InputSource, lane: Lane = 'free') =>
    checkWith(readCheckReply, tool, source, lane, false)

  const verdict = (tool: ToolDefinition, source: InputSource, lane: Lane = 'free') =>
    checkWith(readVerdict, tool, source, lane, true)

  async function fields(body: Uint8Array, names: string[]): Promise<FieldsOutcome> {
    const outcome = await lanes.free.run<FieldsOutcome>({
      kind: 'fields',
      body: ownBuffer(body),
      names,
    })
    return outcome ?? { status: 'invalid', message: 'The body could not be read' }
  }

  async function messages(body: Uint8Array, lane: Lane): Promise<MessagesOutcome> {
    if (body.length <= inlineCheckBytes) return readMessages(body)
    const outcome = await lanes[lane].run<MessagesOutcome>({
      kind: 'messages',
      body: ownBuffer(body),
    })
    return outcome ?? { status: 'invalid_json', message: 'The body could not be read' }
  }

  /** Calls that have waited for a worker for longer than the grace (the queue is oldest first). */
  function waitingPastGrace(): number {
    const since = now() - graceMs
    let n = 0
    while (n < waiting.length && (waiting[n] as Job).queuedAt < since) n++
    return n
  }

  function admit(): Admission {
    if (closed || running + waitingPastGrace() >= capacity) {
      options.observer?.rejected('admission')
      throw new OverloadedError(retryAfterSeconds, 'admission')
    }
    let used = false
    return {
      run(tool, input, nowSeconds) {
        if (used) return Promise.reject(new Error('this admission was already used'))
        used = true
        if (closed) return Promise.reject(failed(tool.id, 'RunnerClosed'))
        const task: ToolTask = { kind: 'run', tool: tool.id, input: input.bytes, nowSeconds }
        if (tool.inline && input.bytes.length <= inlineRunBytes) return runInline(tool, task)
        return new Promise((resolve, reject) => {
          const job: Job = {
            task,
            resolve,
            reject,
            queuedAt: now(),
          }
          waiting.push(job)
          if (warm) {
            startDeadline(job)
            dispatch()
          } else warmUp().catch(() => {})
        })
      },
    }
  }

  /**
   * Starts a queued call's deadline ({@link worstQueueWaitMs}): from when the workers are ready,
   * so that their start (at the first call, or after they were all lost) never counts.
   */
  function startDeadline(job: Job): void {
    job.deadline = setTimeout(() => {
      const index = waiting.indexOf(job)
      if (index < 0) return
      waiting.splice(index, 1)
      logger.warn(
        { tool: job.task.tool, waited_ms: queueDeadlineMs, running, queued: waiting.length },
        'tool call refused: no worker within its queue deadline',
      )
      options.observer?.rejected('queue')
      job.reject(new OverloadedError(retryAfterSeconds, 'queue'))
    }, queueDeadlineMs)
  }

  /** Ready threads that still exist (a thread that exited reports no usable id on the way out). */
  function readyThreads(): number {
    const live = new Set(pool?.threads.map((thread) => thread.threadId))
    for (const id of ready) if (!live.has(id)) ready.delete(id)
    return ready.size
  }

  function dispatch(): void {
    const threads = readyThreads()
    while (
      warm &&
      !closed &&
      running < options.workers &&
      running < threads &&
      waiting.length > 0
    ) {
      start(waiting.shift() as Job)
    }
    // piscina stops replacing threads once one fails while starting: with none left, start over.
    if (warm && !closed && waiting.length > 0 && threads === 0 && pool?.threads.length === 0) {
      logger.error('tool workers are gone; starting new ones')
      const dead = pool
      pool = undefined
      warming = undefined
      warm = false
      dead.destroy().catch(() => {})
      warmUp().catch(() => {})
    }
  }

  function finishJob(job: Job, error: unknown, result?: JsonResult): void {
    clearTimeout(job.deadline)
    if (result) job.resolve(result)
    else job.reject(error)
  }

  /** Tells the observer how a run ended, `started` on `performance.now()`'s clock. */
  function reportRun(tool: string, started: number, error: unknown, result?: JsonResult): void {
    options.observer?.ran({
      tool,
      outcome: result
        ? 'ok'
        : error instanceof ToolTimeoutError
          ? 'timeout'
          : error instanceof ToolError && error.code !== 'tool_failed'
            ? 'tool_error'
            : 'failed',
      seconds: (performance.now() - started) / 1000,
    })
  }

  /** A call of an inline tool, run at once on the calling thread (see {@link INLINE_RUN_BYTES}). */
  function runInline(tool: ToolDefinition, task: ToolTask): Promise<JsonResult> {
    const started = performance.now()
    const ended = endOf(tool.id, runToolTask(tool, task))
    reportRun(tool.id, started, ended.error, ended.result)
    return ended.result ? Promise.resolve(ended.result) : Promise.reject(ended.error)
  }

  function start(job: Job): void {
    clearTimeout(job.deadline)
    running++
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), options.timeoutMs)
    const started = performance.now()
    const end = (error: unknown, result?: JsonResult) => {
      clearTimeout(timer)
      running--
      reportRun(job.task.tool, started, error, result)
      finishJob(job, error, result)
      dispatch()
    }
    ;(pool as Piscina<WorkerTask, TaskOutcome | null>)
      .run(job.task, {
        signal: controller.signal,
        transferList: [job.task.input.buffer as ArrayBuffer],
      })
      .then(
        (outcome) => {
          const ended = endOf(job.task.tool, outcome)
          end(ended.error, ended.result)
        },
        (error: unknown) => {
          end(
            controller.signal.aborted
              ? new ToolTimeoutError(options.timeoutMs)
              : failed(job.task.tool, error instanceof Error ? error.name : typeof error),
          )
        },
      )
  }

  return {
    check,
    verdict,
    fields,
    messages,
    admit,
    warm: () =>
      closed
        ? Promise.resolve()
        : Promise.all([warmUp(), lanes.paid.warm(), lanes.free.warm()]).then(() => undefined),
    status: () => ({
      running,
      queued: waiting.length,
      checking: lanes.paid.size() + lanes.free.size(),
      lanes: {
        paid: { checking: lanes.paid.size(), started: lanes.paid.started() },
        free: { checking: lanes.free.size(), started: lanes.free.started() },
      },
      capacity,
    }),
    async close() {
      closed = true
      for (const job of waiting.splice(0)) finishJob(job, failed(job.task.tool, 'RunnerClosed'))
      const closing = pool
      pool = undefined
      await Promise.all([closing?.destroy(), lanes.paid.close(), lanes.free.close()])
    },
    options: { ...options },
  }
}

/**
 * A view that can be transferred alone: transferring a view's buffer hands over all of it, and a
 * Buffer from Node's pool shares its buffer with others, so a view that does not span its buffer
 * is copied first.
 */
function ownBuffer(view: Uint8Array): Uint8Array {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength ? view : view.slice()
}

/**
 * The piscina options of a pool of `threads` worker threads running worker.ts (with the test
 * catalogue of `options.catalog`, if any).
 */
export function poolOptions(threads: number, options: Pick<ToolRunnerOptions, 'catalog'>) {
  const { filename, worker } = workerModule()
  return {
    filename,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
    niceIncrement: WORKER_NICE,
    workerData: {
      ...(worker ? { worker } : {}),
      ...(options.catalog ? { catalog: options.catalog.href } : {}),
    },
  }
}

/** `tool_failed`, logged by error name only: a message may quote the input. */
function failed(tool: string, name: string): ToolError {
  logger.error({ tool, err: name }, 'tool threw an unexpected error')
  return new ToolError('tool_failed', 'The tool failed on this input; nothing was charged')
}

/**
 * A run's outcome (a worker's, or the calling thread's) as its result or its error: the tool's
 * own `ToolError` as it was thrown, anything else `tool_failed`.
 */
function endOf(
  tool: string,
  outcome: TaskOutcome | null,
): { result: JsonResult; error?: undefined } | { result?: undefined; error: ToolError } {
  if (!outcome) return { error: failed(tool, 'NoOutcome') }
  if (outcome instanceof Uint8Array) return { result: JsonResult.fromWorker(outcome) }
  if ('error' in outcome) {
    const { code, message, details } = outcome.error
    return { error: new ToolError(code, message, details) }
  }
  return { error: failed(tool, outcome.crash) }
}
