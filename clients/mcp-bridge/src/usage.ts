/** The command-line usage, printed by `help` and on a usage error. */
export const USAGE = `usage:
  payload-tools-mcp                            MCP server over stdio, for MCP clients
  payload-tools-mcp call <tool> ['<json>']     pay for one call, print the result and transaction
  payload-tools-mcp refund                     get back what the prepaid channel was not charged
  payload-tools-mcp help                       this text

  <tool>   an MCP name (payload_hash) or the HTTP name (hash, json-validate, payload-inspect)
  <json>   the arguments as one JSON object (default {})

environment:
  PAYLOAD_TOOLS_URL        base URL of the service (required)
  PAYER_PRIVATE_KEY        EVM private key, pays on Base
  PAYER_SOLANA_SECRET_KEY  Solana secret key (base58 or JSON byte array), pays on Solana
  PAYER_RAIL               base or solana: the rail to use when both are offered
  SOLANA_RPC_URL           Solana RPC for the mint and blockhash (default: public mainnet RPC)
  BASE_RPC_URL             Base RPC the prepaid channel is read from (default: public mainnet RPC)
  MAX_USDC_PER_CALL        cap per call in USDC (default 0.01)
  MAX_USDC_PER_SESSION     cap per process in USDC (default 0.10)
  MAX_USDC_PER_DAY         cap per UTC day in USDC, across processes (default: none)
  MAX_USDC_DEPOSIT         largest deposit into a prepaid channel on Base, in USDC (default 1;
                           0: pay every call with exact)`

/** A command line that does not match {@link USAGE}. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}
