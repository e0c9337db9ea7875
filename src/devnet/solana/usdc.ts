import { type Address, address, lamports, none, some } from '@solana/kit'
import {
  AccountState,
  findAssociatedTokenPda,
  getMintCodec,
  getMintSize,
  getTokenCodec,
  getTokenSize,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token'
import type { LiteSVM } from 'litesvm'

/** USDC's mint on Solana mainnet; the devnet creates it at the same address. */
export const USDC_MINT: Address = address('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')

/** Decimals of USDC: 1 USDC = 1_000_000 atomic units. */
export const USDC_DECIMALS = 6

/**
 * Writes an initialized SPL Token mint for USDC (6 decimals, supply 0) into the SVM at `mint`
 * ({@link USDC_MINT} by default; the devnet mint on the testnet stage), owned by the SPL Token
 * program, with the given mint authority and no freeze authority. Overwrites any account already
 * there.
 *
 * Accounts are written with `setAccount` (packing the real Mint layout with the
 * `@solana-program/token` codecs) because no transaction can create an account at an address
 * whose private key nobody holds.
 */
export function createUsdcMint(
  svm: LiteSVM,
  mintAuthority: Address,
  mint: Address = USDC_MINT,
): void {
  const data = getMintCodec().encode({
    mintAuthority: some(mintAuthority),
    supply: 0n,
    decimals: USDC_DECIMALS,
    isInitialized: true,
    freezeAuthority: none(),
  })
  svm.setAccount({
    address: mint,
    data: Uint8Array.from(data),
    executable: false,
    lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(getMintSize()))),
    programAddress: TOKEN_PROGRAM_ADDRESS,
    space: BigInt(getMintSize()),
  })
}

/** The USDC associated token account (ATA) of `owner` under the SPL Token program. */
export async function usdcAta(owner: Address, mint: Address = USDC_MINT): Promise<Address> {
  const [ata] = await findAssociatedTokenPda({
    owner,
    mint,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  })
  return ata
}

/**
 * Balance of `owner`'s USDC ATA in atomic units (6 decimals); 0n when the ATA does not exist.
 */
export async function readUsdcBalance(
  svm: LiteSVM,
  owner: Address,
  mint: Address = USDC_MINT,
): Promise<bigint> {
  const account = svm.getAccount(await usdcAta(owner, mint))
  if (!account.exists) return 0n
  return getTokenCodec().decode(account.data).amount
}

/**
 * Credits `amount` atomic USDC to `owner`'s ATA, creating the ATA (rent-exempt, initialized,
 * owned by the SPL Token program) if missing, and raises the mint's supply by the same amount so
 * supply stays the sum of balances, as a real `MintTo` would.
 *
 * @throws Error if `amount` is negative or the USDC mint was not created first.
 */
export async function mintUsdc(
  svm: LiteSVM,
  owner: Address,
  amount: bigint,
  mintAddress: Address = USDC_MINT,
): Promise<void> {
  if (amount < 0n) throw new Error('mintUsdc: amount must be >= 0')
  const mintAccount = svm.getAccount(mintAddress)
  if (!mintAccount.exists) throw new Error('mintUsdc: the USDC mint does not exist')
  const mint = getMintCodec().decode(mintAccount.data)
  svm.setAccount({
    ...mintAccount,
    data: Uint8Array.from(getMintCodec().encode({ ...mint, supply: mint.supply + amount })),
  })

  const ata = await usdcAta(owner, mintAddress)
  const existing = svm.getAccount(ata)
  const token = existing.exists
    ? getTokenCodec().decode(existing.data)
    : {
        mint: mintAddress,
        owner,
        amount: 0n,
        delegate: none<Address>(),
        state: AccountState.Initialized,
        isNative: none<bigint>(),
        delegatedAmount: 0n,
        closeAuthority: none<Address>(),
      }
  const data = getTokenCodec().encode({ ...token, amount: token.amount + amount })
  svm.setAccount({
    address: ata,
    data: Uint8Array.from(data),
    executable: false,
    lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(getTokenSize()))),
    programAddress: TOKEN_PROGRAM_ADDRESS,
    space: BigInt(getTokenSize()),
  })
}
