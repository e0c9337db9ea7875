import type { Tool } from '@modelcontextprotocol/client'

/** Name of the bridge's local tool that refunds the prepaid channel. */
export const REFUND_TOOL = 'payload_tools_refund'

/** The `tools/list` entry of {@link REFUND_TOOL}, listed when the bridge may pay by channel. */
export const refundTool: Tool = {
  name: REFUND_TOOL,
  title: 'Payload Tools refund',
  description:
    'Free: gets back what the prepaid channel holds and the service has not charged (x402 ' +
    'batch-settlement on Base; the bridge deposits MAX_USDC_DEPOSIT at most when a service ' +
    'offers channels, then pays each call by voucher from it). The service claims what it ' +
    'charged and the escrow sends the rest to your wallet in one transaction. The next paid ' +
    'call opens the channel again with a new deposit. payload_tools_spend shows the channel.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  outputSchema: {
    type: 'object',
    properties: {
      ok: { type: 'boolean', description: 'false on a refusal, with error and code' },
      network: { type: 'string' },
      transaction: { type: 'string' },
      channel: { type: 'string', description: 'The channel id (bytes32 hex)' },
      refunded: {
        type: 'string',
        pattern: '^\\d+(\\.\\d{1,6})?$',
        description: "USDC back in the wallet, as the bridge's record of the channel had it",
      },
    },
    required: ['ok'],
  },
  annotations: {
    title: 'Payload Tools refund',
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true,
  },
}
