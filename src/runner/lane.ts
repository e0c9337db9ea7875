import { Piscina } from 'piscina'
import { logger } from '../logger.js'
import { CheckTimeoutError, OverloadedError } from './errors.js'
import { PING, type WorkerTask } from './task.js'

/** Options of {@link createCheckLane}. */
export interface CheckLaneOptions {
  /** What the lane is for, in logs: `paid` or `free`. */
  name: string
  /** Its threads, each taking one task at a time. */
  threads: number
  /** Tasks that may wait for a thread beyond one per thread. */
  queueLimit: number
  /** Budget of a task on its thread, from its start, in milliseconds. */
  budgetMs: number
  /** Longest a task may wait for a thread, in milliseconds. */
  queueMs: number
  /** Linux `nice` of its threads (higher runs later): free work yields to paid work. */
  nice: number
  /** Piscina options of a pool of `threads` threads running the worker module. */
  poolOptions(threads: number): Record<string, unknown>
  /** `Retry-After` of its refusals, in seconds. */
  retryAfterSeconds: number
}

/** A lane of checker threads, see {@link createCheckLane}. */
export interface CheckLane {
  /**
   * Runs one task whose `body` buffer is transferred to the thread.
   *
   * @returns the worker's reply
   * @throws {OverloadedError} the lane is full (`admission`), or the task was still waiting for a
   *   thread after `queueMs` (`queue`): it never ran
   * @throws {CheckTimeoutError} it ran past its budget; the thread was stopped and replaced
   */
  run<T>(task: WorkerTask & { body: Uint8Array }): Promise<T | null>
  /** Starts the threads and waits until each has loaded the worker module. */
  warm(): Promise<void>
  /** Tasks running or waiting. */
  size(): number
  /** Tasks it has started on a thread since it was created. */
  started(): number
  close(): Promise<void>
}

interface Pending {
  task: WorkerTask & { body: Uint8Array }
  resolve(value: unknown): void
  reject(error: unknown): void
  /** Set once it runs: stops the thread when the budget runs out. */
  controller?: AbortController
  /** Its queue deadline while it waits (once the lane is ready), then its budget while it runs. */
  timer?: NodeJS.Timeout
}

/**
 * A pool of checker threads with a bounded queue of its own, in front of piscina: a task goes to
 * piscina only when a thread is free, so that its budget counts its own work, and a task that
 * waited too long is told apart (the lane's fault: `overloaded`) from one that ran too long (the
 * input's: `input_check_timeout`).
 * Each lane has its own threads, so that one kind of work (free input checks) can never take the
 * capacity of another (the checks of paid calls).
 *
 * @example
 * const paid = createCheckLane({ name: 'paid', threads: 1, queueLimit: 16, budgetMs: 2000, queueMs: 2000, nice: 10, poolOptions, retryAfterSeconds: 2 })
 * const reply = await paid.run({ kind: 'check', tool: 'hash', body })
 */
export function createCheckLane(options: CheckLaneOptions): CheckLane {
  const { threads, budgetMs } = options
  const waiting: Pending[] = []
  let running = 0
  let ran = 0
  let closed = false
  let pool: Piscina<WorkerTask, unknown> | undefined
  /** Whether every thread has loaded the worker module; tasks wait, untimed, until then. */
  let ready = false
  let warming: Promise<void> | undefined

  function started(): Piscina<WorkerTask, unknown> {
    if (!pool) {
      pool = new Piscina<WorkerTask, unknown>({
        ...options.poolOptions(threads),
        niceIncrement: options.nice,
      })
      pool.on('error', (error: unknown) => {
        logger.error(
          { lane: options.name, err: error instanceof Error ? error.name : typeof error },
          'input checker failed',
        )
      })
    }
    return pool
  }

  /** Starts the queue deadline of a waiting task: from now, as a thread could take it now. */
  function queueDeadline(pending: Pending): void {
    pending.timer = setTimeout(() => {
      waiting.splice(waiting.indexOf(pending), 1)
      pending.reject(new OverloadedError(options.retryAfterSeconds, 'queue'))
    }, options.queueMs)
  }

  /**
   * Waits until every thread has loaded the worker module (at the first task, and after a thread
   * was stopped and replaced), so that neither a task's budget nor its queue deadline counts a
   * thread's start.
   */
  function warmUp(): Promise<void> {
    if (closed) return Promise.resolve()
    warming ??= (async () => {
      const p = started()
      try {
        await Promise.all(Array.from({ length: threads - running }, () => p.run(PING)))
        ready = true
        for (const pending of waiting) queueDeadline(pending)
      } catch (error) {
        logger.error(
          { lane: options.name, err: (error as Error)?.name },
          'input checker failed to start',
        )
        for (const pending of waiting.splice(0)) {
          pending.reject(new OverloadedError(options.retryAfterSeconds, 'admission'))
        }
      } finally {
        warming = undefined
      }
      pump()
    })()
    return warming
  }

  function pump(): void {
    if (!ready) {
      if (waiting.length > 0) void warmUp()
      return
    }
    while (running < threads && waiting.length > 0 && !closed) {
      const pending = waiting.shift() as Pending
      running++
      ran++
      clearTimeout(pending.timer)
      const controller = new AbortController()
      pending.controller = controller
      pending.timer = setTimeout(() => controller.abort(), budgetMs)
      const done = () => {
        clearTimeout(pending.timer)
        running--
        // A stopped thread is replaced: the next task waits, untimed, for its start.
        if (controller.signal.aborted) ready = false
        pump()
      }
      started()
        .run(pending.task, {
          signal: controller.signal,
          transferList: [pending.task.body.buffer as ArrayBuffer],
        })
        .then(
          (reply) => {
            done()
            pending.resolve(reply)
          },
          (error: unknown) => {
            done()
            if (controller.signal.aborted) {
              pending.reject(new CheckTimeoutError(budgetMs))
              return
            }
            logger.error({ lane: options.name, err: (error as Error)?.name }, 'input check failed')
            pending.reject(new OverloadedError(options.retryAfterSeconds, 'admission'))
          },
        )
    }
  }

  return {
    run<T>(task: WorkerTask & { body: Uint8Array }): Promise<T | null> {
      if (closed || running + waiting.length >= threads + options.queueLimit) {
        return Promise.reject(new OverloadedError(options.retryAfterSeconds, 'admission'))
      }
      return new Promise<T | null>((resolve, reject) => {
        const pending = {
          task,
          resolve: resolve as (value: unknown) => void,
          reject,
        } as Pending
        waiting.push(pending)
        if (ready) queueDeadline(pending)
        pump()
      })
    },
    warm: () => (ready ? Promise.resolve() : warmUp()),
    size: () => running + waiting.length,
    started: () => ran,
    async close() {
      closed = true
      for (const pending of waiting.splice(0)) {
        clearTimeout(pending.timer)
        pending.reject(new OverloadedError(options.retryAfterSeconds, 'admission'))
      }
      const p = pool
      pool = undefined
      await p?.destroy()
    },
  }
}
