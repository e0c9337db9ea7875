import {
  type Address,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  getTransactionEncoder,
  isAddress,
  isBlockhash,
  isSignature,
  type Signature,
  signature,
  type Transaction,
} from '@solana/kit'
import { getMintCodec, getTokenCodec, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { FailedTransactionMetadata, type LiteSVM, type TransactionMetadata } from 'litesvm'
import {
  describeTransactionError,
  type RpcTransactionError,
  toRpcTransactionError,
} from './transaction-error.js'

/** A JSON-RPC 2.0 error a method handler throws; the server sends it as the response `error`. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
    this.name = 'RpcError'
  }
}

/** A Solana JSON-RPC method: positional `params` in, JSON `result` out (u64 values as bigint). */
export type RpcMethod = (params: readonly unknown[]) => unknown

/** Blocks a blockhash stays valid for on Solana (`MAX_PROCESSING_AGE`). */
const BLOCKHASH_LIFETIME_SLOTS = 150n

/** `rentEpoch` Solana reports for rent-exempt accounts (u64::MAX). */
const RENT_EXEMPT_EPOCH = 18_446_744_073_709_551_615n

/** `getSignatureStatuses` accepts at most this many signatures per call. */
const MAX_SIGNATURE_STATUSES = 256

/** `getSignaturesForAddress` answers at most this many signatures per call (its default too). */
const MAX_SIGNATURES_FOR_ADDRESS = 1000

/**
 * Landed transactions kept for `getTransaction` and `getSignaturesForAddress`, oldest dropped
 * first: a validator without `--enable-rpc-transaction-history` keeps none, and this devnet
 * needs only those of a dev or test run (each entry holds the wire transaction, about 1 KiB).
 */
const RECORDED_TRANSACTIONS = 20_000

const invalidParams = (detail: string) => new RpcError(-32602, `Invalid params: ${detail}`)

function config(params: readonly unknown[], index: number): Record<string, unknown> {
  const value = params[index]
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidParams('expected an object')
  return value as Record<string, unknown>
}

function addressParam(value: unknown): Address {
  if (typeof value !== 'string' || !isAddress(value))
    throw new RpcError(-32602, 'Invalid param: WrongSize')
  return value
}

function decodeTransaction(wire: unknown, encoding: unknown): Transaction {
  if (typeof wire !== 'string') throw invalidParams('transaction must be a string')
  let bytes: Uint8Array
  try {
    if (encoding === 'base64') bytes = Uint8Array.from(getBase64Encoder().encode(wire))
    else if (encoding === undefined || encoding === 'base58') {
      bytes = Uint8Array.from(getBase58Encoder().encode(wire))
    } else throw invalidParams(`unsupported encoding: ${String(encoding)}`)
    return getTransactionDecoder().decode(bytes)
  } catch (error) {
    if (error instanceof RpcError) throw error
    throw new RpcError(
      -32602,
      `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${String(error)}`,
    )
  }
}

/** Base58 of the first (fee payer's) signature; 64 zero bytes when it is missing, as on Solana. */
function firstSignature(tx: Transaction): Signature {
  const first = Object.values(tx.signatures)[0]
  return signature(getBase58Decoder().decode(first ?? new Uint8Array(64)))
}

function isFullySigned(tx: Transaction): boolean {
  return Object.values(tx.signatures).every((signature) => signature !== null)
}

/** Rewrites the message's recent blockhash (only meaningful with `sigVerify: false`). */
function withBlockhash(tx: Transaction, blockhash: string): Transaction {
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes)
  const messageBytes = getCompiledTransactionMessageEncoder().encode({
    ...message,
    lifetimeToken: blockhash,
  })
  return { ...tx, messageBytes: messageBytes as Transaction['messageBytes'] }
}

/** Solana's `UiTokenAmount.uiAmountString`: the decimal amount without trailing zeros. */
function uiAmountString(amount: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals)
  const fraction = (amount % scale).toString().padStart(decimals, '0').replace(/0+$/, '')
  return fraction ? `${amount / scale}.${fraction}` : `${amount / scale}`
}

interface ExecutionReport {
  err: RpcTransactionError | null
  logs: string[]
  unitsConsumed: bigint
  returnData: { programId: string; data: [string, 'base64'] } | null
  innerInstructions: unknown[]
}

function report(result: TransactionMetadata | FailedTransactionMetadata): ExecutionReport {
  const failed = result instanceof FailedTransactionMetadata
  const meta = failed ? result.meta() : result
  const returned = meta.returnData()
  const returnedData = returned.data()
  const innerInstructions = meta
    .innerInstructions()
    .map((instructions, index) => ({
      index,
      instructions: instructions.map((inner) => {
        const compiled = inner.instruction()
        return {
          programIdIndex: compiled.programIdIndex(),
          accounts: Array.from(compiled.accounts()),
          data: getBase58Decoder().decode(compiled.data()),
          stackHeight: inner.stackHeight(),
        }
      }),
    }))
    .filter((entry) => entry.instructions.length > 0)
  return {
    err: failed ? toRpcTransactionError(result.err()) : null,
    logs: meta.logs(),
    unitsConsumed: meta.computeUnitsConsumed(),
    returnData:
      returnedData.length > 0
        ? {
            programId: getBase58Decoder().decode(returned.programId()),
            data: [getBase64Decoder().decode(returnedData), 'base64'],
          }
        : null,
    innerInstructions,
  }
}

/**
 * The Solana JSON-RPC methods the devnet serves, over one litesvm instance (see rpc-server.ts for
 * the list and the confirmation model). Each landed transaction is final at once: litesvm
 * executes synchronously and has no forks.
 *
 * The SVM must run with signature verification on (litesvm's default): simulations with
 * `sigVerify: false` switch it off for their own duration only.
 *
 * @param hooks.onLanded - called with the signature of each transaction `sendTransaction` lands
 *   (failed executions included: they land and pay their fee), once per transaction
 */
export function createSolanaRpcMethods(
  svm: LiteSVM,
  hooks: { onLanded?: (signature: Signature) => void } = {},
): Record<string, RpcMethod> {
  /** Slot each signature landed in; litesvm's history stays the source of truth for landing. */
  const landedAt = new Map<string, bigint>()
  /** What `getTransaction` answers for each landed transaction, in landing order. */
  const recorded = new Map<string, Recorded>()
  /** Signatures of the landed transactions that name each account, oldest first. */
  const byAccount = new Map<string, Signature[]>()

  function record(txSignature: Signature, tx: Transaction): void {
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes)
    recorded.set(txSignature, {
      wire: getBase64Decoder().decode(getTransactionEncoder().encode(tx)),
      slot: slot(),
      // litesvm's clock does not follow the wall clock; Solana's blockTime is the wall clock's.
      blockTime: BigInt(Math.floor(Date.now() / 1000)),
      version: message.version,
    })
    for (const account of message.staticAccounts) {
      const list = byAccount.get(account) ?? []
      list.push(txSignature)
      if (list.length > RECORDED_TRANSACTIONS) list.shift()
      byAccount.set(account, list)
    }
    if (recorded.size > RECORDED_TRANSACTIONS) {
      const [oldest] = recorded.keys()
      if (oldest !== undefined) recorded.delete(oldest)
      // Lists lose the dropped signature lazily: getSignaturesForAddress skips unrecorded ones.
    }
  }

  function executionStatus(txSignature: Signature) {
    const landed = svm.getTransaction(txSignature)
    if (landed === null) return undefined
    const failed = landed instanceof FailedTransactionMetadata
    const meta = failed ? landed.meta() : landed
    const err = failed ? toRpcTransactionError(landed.err()) : null
    return { err, meta }
  }

  const slot = () => svm.getClock().slot
  const context = () => ({ slot: slot() })

  function simulate(tx: Transaction, sigVerify: boolean) {
    svm.withSigverify(sigVerify)
    try {
      const result = svm.simulateTransaction(tx)
      return result instanceof FailedTransactionMetadata ? result : result.meta()
    } finally {
      svm.withSigverify(true)
    }
  }

  function encodedAccount(target: Address, encoding: unknown, dataSlice: unknown) {
    const account = svm.getAccount(target)
    if (!account.exists) return null
    let data = Uint8Array.from(account.data)
    if (dataSlice !== undefined) {
      const { offset, length } = dataSlice as { offset?: unknown; length?: unknown }
      if (typeof offset !== 'number' || typeof length !== 'number') {
        throw invalidParams('dataSlice needs numeric offset and length')
      }
      data = data.slice(offset, offset + length)
    }
    let encoded: [string, string] | string
    if (encoding === 'base64') encoded = [getBase64Decoder().decode(data), 'base64']
    else if (encoding === 'base58') encoded = [getBase58Decoder().decode(data), 'base58']
    // Solana's legacy default ("binary"): a bare base58 string.
    else if (encoding === undefined) encoded = getBase58Decoder().decode(data)
    else throw invalidParams(`encoding ${String(encoding)} is not supported by this devnet`)
    return {
      data: encoded,
      executable: account.executable,
      lamports: account.lamports,
      owner: account.programAddress,
      rentEpoch: RENT_EXEMPT_EPOCH,
      space: BigInt(account.data.length),
    }
  }

  function signatureStatus(value: string) {
    if (!isSignature(value)) throw invalidParams(`invalid signature: ${value}`)
    const landed = svm.getTransaction(value)
    if (landed === null) return null
    const err =
      landed instanceof FailedTransactionMetadata ? toRpcTransactionError(landed.err()) : null
    return {
      slot: landedAt.get(value) ?? slot(),
      confirmations: null,
      err,
      status: err === null ? { Ok: null } : { Err: err },
      confirmationStatus: 'finalized',
    }
  }

  return {
    getLatestBlockhash: () => ({
      context: context(),
      value: {
        blockhash: svm.latestBlockhash(),
        lastValidBlockHeight: slot() + BLOCKHASH_LIFETIME_SLOTS,
      },
    }),

    getAccountInfo: (params) => {
      const { encoding, dataSlice } = config(params, 1)
      return {
        context: context(),
        value: encodedAccount(addressParam(params[0]), encoding, dataSlice),
      }
    },

    getBalance: (params) => ({
      context: context(),
      value: svm.getBalance(addressParam(params[0])) ?? 0n,
    }),

    getTokenAccountBalance: (params) => {
      const account = svm.getAccount(addressParam(params[0]))
      if (!account.exists) throw new RpcError(-32602, 'Invalid param: could not find account')
      if (account.programAddress !== TOKEN_PROGRAM_ADDRESS || account.data.length !== 165) {
        throw new RpcError(-32602, 'Invalid param: not a Token account')
      }
      const token = getTokenCodec().decode(account.data)
      const mint = svm.getAccount(token.mint)
      if (!mint.exists) throw new RpcError(-32602, 'Invalid param: could not find mint')
      const { decimals } = getMintCodec().decode(mint.data)
      const uiAmount = uiAmountString(token.amount, decimals)
      return {
        context: context(),
        value: {
          amount: token.amount.toString(),
          decimals,
          uiAmount: Number(uiAmount),
          uiAmountString: uiAmount,
        },
      }
    },

    simulateTransaction: (params) => {
      const options = config(params, 1)
      const sigVerify = options.sigVerify === true
      const replaceRecentBlockhash = options.replaceRecentBlockhash === true
      if (sigVerify && replaceRecentBlockhash) {
        throw invalidParams('sigVerify may not be used with replaceRecentBlockhash')
      }
      if (options.accounts !== undefined && options.accounts !== null) {
        throw invalidParams('the accounts option is not supported by this devnet')
      }
      let tx = decodeTransaction(params[0], options.encoding)
      let replacementBlockhash = null
      if (replaceRecentBlockhash) {
        tx = withBlockhash(tx, svm.latestBlockhash())
        replacementBlockhash = {
          blockhash: svm.latestBlockhash(),
          lastValidBlockHeight: slot() + BLOCKHASH_LIFETIME_SLOTS,
        }
      }
      if (sigVerify && !isFullySigned(tx)) {
        throw new RpcError(-32003, 'Transaction signature verification failure')
      }
      const outcome = report(simulate(tx, sigVerify))
      if (sigVerify && outcome.err === 'SignatureFailure') {
        throw new RpcError(-32003, 'Transaction signature verification failure')
      }
      return {
        context: context(),
        value: {
          err: outcome.err,
          logs: outcome.logs,
          accounts: null,
          unitsConsumed: outcome.unitsConsumed,
          returnData: outcome.returnData,
          innerInstructions: options.innerInstructions === true ? outcome.innerInstructions : null,
          replacementBlockhash,
        },
      }
    },

    sendTransaction: (params) => {
      const options = config(params, 1)
      const tx = decodeTransaction(params[0], options.encoding)
      const txSignature = firstSignature(tx)
      const skipPreflight = options.skipPreflight === true

      if (!skipPreflight) {
        if (!isFullySigned(tx))
          throw new RpcError(-32003, 'Transaction signature verification failure')
        const preflight = report(simulate(tx, true))
        if (preflight.err === 'SignatureFailure') {
          throw new RpcError(-32003, 'Transaction signature verification failure')
        }
        if (preflight.err !== null) {
          throw new RpcError(
            -32002,
            `Transaction simulation failed: ${describeTransactionError(preflight.err)}`,
            {
              err: preflight.err,
              logs: preflight.logs,
              accounts: null,
              unitsConsumed: preflight.unitsConsumed,
              returnData: preflight.returnData,
              innerInstructions: null,
            },
          )
        }
      }

      // Without preflight Solana forwards whatever it got and answers with the signature; the
      // leader then drops what cannot execute (duplicates, bad signatures, unknown blockhash), so
      // such a transaction never gets a status. litesvm's history records exactly the
      // transactions that landed, failed executions included.
      if (!isFullySigned(tx) || svm.getTransaction(txSignature) !== null) return txSignature
      svm.sendTransaction(tx)
      if (svm.getTransaction(txSignature) !== null) {
        landedAt.set(txSignature, slot())
        record(txSignature, tx)
        hooks.onLanded?.(txSignature)
      }
      return txSignature
    },

    getSignatureStatuses: (params) => {
      const signatures = params[0]
      if (!Array.isArray(signatures) || !signatures.every((s) => typeof s === 'string')) {
        throw invalidParams('expected an array of base58 signatures')
      }
      if (signatures.length > MAX_SIGNATURE_STATUSES) {
        throw invalidParams(`Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`)
      }
      return { context: context(), value: signatures.map(signatureStatus) }
    },

    // A blockhash is valid while litesvm accepts it: only its latest one (`expireBlockhash`
    // replaces it), so nothing signed with an older one can ever land.
    isBlockhashValid: (params) => {
      const blockhash = params[0]
      if (typeof blockhash !== 'string' || !isBlockhash(blockhash)) {
        throw invalidParams('invalid blockhash')
      }
      return { context: context(), value: blockhash === svm.latestBlockhash() }
    },

    getSignaturesForAddress: (params) => {
      const account = addressParam(params[0])
      const { limit = MAX_SIGNATURES_FOR_ADDRESS, before, until } = config(params, 1)
      if (
        typeof limit !== 'number' ||
        !Number.isInteger(limit) ||
        limit < 1 ||
        limit > MAX_SIGNATURES_FOR_ADDRESS
      ) {
        throw invalidParams('Invalid limit')
      }
      const list = byAccount.get(account) ?? []
      const answer = []
      // Newest first, strictly older than `before`, stopping at `until` (excluded), as Solana.
      let started = before === undefined || before === null
      for (let i = list.length - 1; i >= 0 && answer.length < limit; i--) {
        const txSignature = list[i] as Signature
        if (!started) {
          started = txSignature === before
          continue
        }
        if (txSignature === until) break
        const entry = recorded.get(txSignature)
        const status = executionStatus(txSignature)
        if (entry === undefined || status === undefined) continue
        answer.push({
          signature: txSignature,
          slot: entry.slot,
          err: status.err,
          memo: null,
          blockTime: entry.blockTime,
          confirmationStatus: 'finalized',
        })
      }
      return answer
    },

    getTransaction: (params) => {
      const txSignature = params[0]
      if (typeof txSignature !== 'string' || !isSignature(txSignature)) {
        throw invalidParams('invalid signature')
      }
      const { encoding = 'json', maxSupportedTransactionVersion } = config(params, 1)
      if (encoding !== 'base64' && encoding !== 'base58') {
        throw invalidParams(`encoding ${String(encoding)} is not supported by this devnet`)
      }
      const entry = recorded.get(txSignature)
      const status = executionStatus(txSignature)
      if (entry === undefined || status === undefined) return null
      if (entry.version !== 'legacy' && maxSupportedTransactionVersion === undefined) {
        throw new RpcError(
          -32015,
          `Transaction version (${entry.version}) is not supported by the requesting client. ` +
            'Please try the request again with the following configuration parameter: ' +
            '"maxSupportedTransactionVersion": 0',
        )
      }
      const wire =
        encoding === 'base64'
          ? entry.wire
          : getBase58Decoder().decode(getBase64Encoder().encode(entry.wire))
      return {
        slot: entry.slot,
        blockTime: entry.blockTime,
        version: entry.version,
        transaction: [wire, encoding],
        // What litesvm reports; balances and the fee are not recorded by this devnet.
        meta: {
          err: status.err,
          status: status.err === null ? { Ok: null } : { Err: status.err },
          logMessages: status.meta.logs(),
          computeUnitsConsumed: status.meta.computeUnitsConsumed(),
        },
      }
    },
  }
}

/** One landed transaction as `getTransaction` answers it. */
interface Recorded {
  /** The wire transaction, base64. */
  wire: string
  slot: bigint
  /** Epoch seconds when it landed. */
  blockTime: bigint
  version: 'legacy' | 0
}
