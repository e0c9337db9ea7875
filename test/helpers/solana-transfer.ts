import {
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type TransactionSigner,
} from '@solana/kit'
import { getTransferCheckedInstruction } from '@solana-program/token'

/**
 * What {@link transferWire} builds: a `TransferChecked` of 1000 atomic units (6 decimals) of
 * `mint`, from the payer's address to the fee payer's (no token accounts: only its bytes matter).
 */
export interface TransferParts {
  /** Signs the transfer (its authority). */
  payer: TransactionSigner
  /** The fee payer, left unsigned: the facilitator's slot stays empty, as in x402 `exact`. */
  feePayer: Address
  mint: Address
  blockhash: string
}

/** A transfer signed by its payer alone, as a Base64 wire transaction (@solana/kit). */
export async function transferWire(version: 0 | 'legacy', parts: TransferParts): Promise<string> {
  return getBase64EncodedWireTransaction(
    await partiallySignTransactionMessageWithSigners(
      pipe(
        createTransactionMessage({ version: version as 0 }),
        (m) =>
          setTransactionMessageLifetimeUsingBlockhash(
            { blockhash: parts.blockhash as Blockhash, lastValidBlockHeight: 0n },
            m,
          ),
        (m) => setTransactionMessageFeePayer(parts.feePayer, m),
        (m) =>
          appendTransactionMessageInstructions(
            [
              getTransferCheckedInstruction({
                source: parts.payer.address,
                mint: parts.mint,
                destination: parts.feePayer,
                authority: parts.payer,
                amount: 1000n,
                decimals: 6,
              }),
            ],
            m,
          ),
      ),
    ),
  )
}
