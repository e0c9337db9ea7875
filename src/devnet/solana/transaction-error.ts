import type { FailedTransactionMetadata } from 'litesvm'
import {
  InstructionErrorBorshIo,
  InstructionErrorCustom,
  TransactionErrorDuplicateInstruction,
  TransactionErrorInstructionError,
  TransactionErrorInsufficientFundsForRent,
  TransactionErrorProgramExecutionTemporarilyRestricted,
} from 'litesvm/dist/internal.js'

/** A litesvm transaction error, as returned by `FailedTransactionMetadata.err()`. */
export type LiteSvmTransactionError = ReturnType<FailedTransactionMetadata['err']>

/**
 * A `TransactionError` in Solana's JSON-RPC wire format (serde's externally tagged enums), e.g.
 * `"BlockhashNotFound"` or `{ "InstructionError": [2, { "Custom": 1 }] }`.
 */
export type RpcTransactionError = string | Record<string, unknown>

// Variant names in the order of litesvm's `TransactionErrorFieldless` const enum (litesvm 1.5),
// which its typings declare as an ambient const enum that isolatedModules cannot read.
const TRANSACTION_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
] as const

// Same, for litesvm's `InstructionErrorFieldless`.
const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
] as const

// Display strings of agave's `TransactionError` for the errors a payment flow can meet; other
// variants are shown by name.
const TRANSACTION_ERROR_MESSAGES: Record<string, string> = {
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  SignatureFailure: 'Transaction did not pass signature verification',
}

function fieldlessName(names: readonly string[], value: number): string {
  return names[value] ?? `Unknown(${value})`
}

/**
 * Converts a litesvm transaction error to Solana's JSON-RPC `TransactionError` shape, the `err`
 * of `simulateTransaction` and `getSignatureStatuses`.
 *
 * @example
 * toRpcTransactionError(failed.err()) // { InstructionError: [2, { Custom: 1 }] }
 */
export function toRpcTransactionError(err: LiteSvmTransactionError): RpcTransactionError {
  if (typeof err === 'number') return fieldlessName(TRANSACTION_ERRORS, err)
  if (err instanceof TransactionErrorInstructionError) {
    const inner = err.err()
    let detail: RpcTransactionError
    if (typeof inner === 'number') detail = fieldlessName(INSTRUCTION_ERRORS, inner)
    else if (inner instanceof InstructionErrorCustom) detail = { Custom: inner.code }
    else if (inner instanceof InstructionErrorBorshIo) detail = { BorshIoError: inner.msg }
    else detail = 'GenericError'
    return { InstructionError: [err.index, detail] }
  }
  if (err instanceof TransactionErrorDuplicateInstruction) {
    return { DuplicateInstruction: err.index }
  }
  if (err instanceof TransactionErrorInsufficientFundsForRent) {
    return { InsufficientFundsForRent: { account_index: err.accountIndex } }
  }
  if (err instanceof TransactionErrorProgramExecutionTemporarilyRestricted) {
    return { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } }
  }
  return 'SanitizeFailure'
}

/**
 * Human-readable form of an RPC `TransactionError`, following agave's Display strings for common
 * cases (used in the `-32002` preflight failure message: "Transaction simulation failed: …").
 *
 * @example
 * describeTransactionError({ InstructionError: [2, { Custom: 1 }] })
 * // 'Error processing Instruction 2: custom program error: 0x1'
 */
export function describeTransactionError(err: RpcTransactionError): string {
  if (typeof err === 'string') return TRANSACTION_ERROR_MESSAGES[err] ?? err
  const instruction = err.InstructionError
  if (Array.isArray(instruction)) {
    const [index, detail] = instruction as [number, RpcTransactionError]
    let text = JSON.stringify(detail)
    if (typeof detail === 'string') text = detail
    else if (typeof detail.Custom === 'number') {
      text = `custom program error: 0x${detail.Custom.toString(16)}`
    }
    return `Error processing Instruction ${index}: ${text}`
  }
  return JSON.stringify(err)
}
