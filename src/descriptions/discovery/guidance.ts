import {
  DELIVERY_RECEIPT,
  didDocumentPath,
  JWKS_PATH,
  OFFER_RECEIPT,
  RECEIPTS_VERIFY_PATH,
} from '../../receipts/index.js'
import { MCP_BRIDGE, MCP_PATH, type NamedNetwork, X402 } from '../service-info.js'
import { networksInWords } from '../words.js'

/** A configured rail as the guidance names it: display name, CAIP-2 network, test or not. */
export type GuidedRail = NamedNetwork & { network: string }

/**
 * The rails' networks in words with their CAIP-2 identifiers, e.g. "Base Sepolia `eip155:84532`
 * or Solana devnet `solana:EtWT…` (test networks: faucet USDC, no value)".
 */
function railsInWords(rails: readonly GuidedRail[]): string {
  return networksInWords(
    rails.map((r) => ({ ...r, name: `${r.name} \`${r.network}\`` })),
    'or',
  )
}

/**
 * The steps of a paid HTTP call (SPEC 5), as Markdown list items without markers: shared by
 * llms.txt and the OpenAPI description so that they cannot disagree.
 *
 * @param rails - configured rails, in advertising order: the first step names their networks
 * @example
 * httpPaymentSteps(rails)[0] // 'POST the JSON body to the tool path without payment. …'
 */
export function httpPaymentSteps(rails: readonly GuidedRail[]): string[] {
  return [
    'POST the JSON body to the tool path without payment. The answer is `402` with a ' +
      `\`${X402.requiredHeader}\` header: Base64 of the x402 v${X402.version} PaymentRequired JSON, ` +
      `whose \`accepts\` holds one \`${X402.scheme}\` entry per rail (USDC on ${railsInWords(rails)}), ` +
      'each with `amount` in atomic units (6 decimals), `asset` and `payTo`; on Base, while ' +
      'prepaid channels are offered, a `batch-settlement` entry follows its `exact` one ' +
      '(`/capabilities` lists the schemes of each rail). ' +
      'Its `extensions.bazaar` describes the body and the result.',
    'The 402 body is `{ok: false, code: "payment_required", …}`; when the request carried a body, ' +
      'it also holds `input_check: {valid, errors[]}` (JSON Pointers): fix the body before paying, ' +
      'an invalid body is refused with 400 and nothing is charged.',
    'Choose one rail, sign a PaymentPayload for it with an x402 v2 client (e.g. `@x402/fetch` with ' +
      `\`@x402/evm\` or \`@x402/svm\`), echo \`extensions\` unchanged, and repeat the same request ` +
      `with the \`${X402.signatureHeader}\` header (Base64 of the PaymentPayload JSON).`,
    'The facilitator verifies the payment, the tool runs, the payment settles, and the answer is ' +
      `\`200 {ok: true, result}\` with a \`${X402.responseHeader}\` header (Base64 SettleResponse: ` +
      `transaction, network, payer, and in \`extensions["${DELIVERY_RECEIPT}"]\` the signed delivery ` +
      'receipt, see Receipts). A tool error answers 400 and is never settled.',
    'If the facilitator is unavailable the call fails closed with `503 facilitator_unavailable`: ' +
      'nothing runs and nothing is charged. Retry after the `Retry-After` seconds. A `503 ' +
      'overloaded` (every tool worker busy) also comes before the payment is verified: retry the ' +
      'same request after `Retry-After`, as does `503 guard_unavailable` (the shared ' +
      'duplicate-settlement guard is down). A tool that runs out of its time budget answers ' +
      '`400 tool_timeout`, never charged.',
    'Retrying is safe: the same payment, or a new one carrying the same x402 `payment-identifier` ' +
      '`id` (the optional extension every 402 declares; add one with ' +
      '`appendPaymentIdentifierToExtensions` from `@x402/extensions/payment-identifier`), for the ' +
      'same tool and input within 120 s answers `200` with the result and the original ' +
      `\`${X402.responseHeader}\` and charges nothing more; \`409 payment_in_progress\` (\`Retry-After: 1\`) ` +
      'while the first call runs; `402 duplicate_settlement` for a different input. The same ' +
      'holds over MCP.',
  ]
}

/**
 * How to pay by voucher from a prepaid channel (x402 `batch-settlement`, Base), as Markdown list
 * items without markers: llms.txt lists them when the service is configured for channels (their
 * offer waits for the start-up check of the escrow: `/capabilities` says whether it is live).
 *
 * @param base - public base URL, without trailing slash
 * @example voucherPaymentSteps(base)[0] // 'On Base, while prepaid channels are offered, …'
 */
export function voucherPaymentSteps(base: string): string[] {
  return [
    "On Base, while prepaid channels are offered (`/capabilities` lists `batch-settlement` in the rail's " +
      '`schemes`), `accepts` also holds a `batch-settlement` entry after the `exact` one, at the same ' +
      'price, with `extra.minDeposit` (atomic USDC), `extra.receiverAuthorizer` and ' +
      '`extra.withdrawDelay` (seconds). Clients that know only `exact` can ignore it.',
    'Pay it with `BatchSettlementEvmScheme` from `@x402/evm/batch-settlement/client` (its signer ' +
      'made with `toClientEvmSigner(account, publicClient)` so that it can read the chain), behind ' +
      '`@x402/fetch` or in `_meta["x402/payment"]` over MCP. The first payment deposits ' +
      '`minDeposit` into the x402 escrow (one transaction the facilitator settles); every later ' +
      'call is a voucher on the cumulative amount, checked by the service without the ' +
      "facilitator, answered with an empty `transaction` and the channel's state in the " +
      "SettleResponse's `extra` (`chargedAmount`, `channelState`), which the client's response " +
      'hook reads. Keep its channel records (e.g. `FileClientChannelStorage` of ' +
      '`@x402/evm/batch-settlement/client/file-storage`) between runs.',
    'A voucher on the wrong cumulative amount is answered 402 with the corrective PaymentRequired ' +
      "(`error` `invalid_batch_settlement_evm_cumulative_amount_mismatch`, the channel's state and " +
      "the payer's own last voucher in the entry's `extra`): the client resyncs and signs again, " +
      'nothing charged. Send one call at a time per channel: a voucher while another call of the ' +
      'channel is in flight gets 402 with `invalid_batch_settlement_evm_channel_busy`; sign again ' +
      'once that call answered.',
    `Refund: \`scheme.refund("${base}/<tool path>")\` (a GET on the paid route, then a GET with a ` +
      'refund voucher) makes the service claim what it charged and the escrow return the rest in ' +
      'one transaction; the service also refunds idle channels, and the escrow lets a payer ' +
      'withdraw the unclaimed rest without the service after `withdrawDelay`.',
  ]
}

/**
 * The steps of a paid MCP call (x402 MCP transport), as Markdown list items without markers.
 *
 * @param base - public base URL, without trailing slash
 */
export function mcpPaymentSteps(base: string): string[] {
  return [
    `Connect to \`${base}${MCP_PATH}\` (Streamable HTTP, JSON responses, stateless). ` +
      '`initialize`, `ping` and `tools/list` are free.',
    '`tools/call` without payment returns an `isError` result whose `structuredContent` is the ' +
      'PaymentRequired (the same rails and prices as over HTTP).',
    'Sign one of its `accepts` and call the tool again with the PaymentPayload in ' +
      `\`params._meta["${X402.mcpPaymentMeta}"]\`. The result is \`{ok: true, result}\`, with a ` +
      `compact SettleResponse in \`_meta["${X402.mcpResponseMeta}"]\` (\`success\`, \`payer\`, ` +
      `\`transaction\`, \`network\`, and in \`extensions["${DELIVERY_RECEIPT}"].info\` the signed ` +
      'delivery receipt with copies of its `input_sha256` and `result_sha256`; the receipt is ' +
      'described under receipts, not in every result).',
  ]
}

/**
 * What a paid call's receipts are and how to check them, as Markdown list items without markers:
 * shared by llms.txt and the OpenAPI description (docs/receipts.md has the recipe).
 *
 * @param base - public base URL, without trailing slash
 */
export function receiptSteps(base: string): string[] {
  return [
    `Every paid \`200\` (HTTP and MCP, idempotent replays included) carries a delivery receipt in ` +
      `the SettleResponse: \`extensions["${DELIVERY_RECEIPT}"].info.receipt\`, a compact JWS signed ` +
      'by the service (`alg` EdDSA over Ed25519, `kid` in its header, `typ` ' +
      '`delivery-receipt+jwt`). Its claims: `iss` (the service), `iat` (the time of the call, the ' +
      'clock a tool reads), `resource`, `tool`, `input_sha256` and `result_sha256` (lower-case hex ' +
      'SHA-256 of the RFC 8785 canonical JSON of the input with the schema defaults applied, and of ' +
      'the `result`), `network`, `asset`, `amount` (atomic), `pay_to` and `transaction`. It holds no ' +
      'input, no result and no payer address.',
    `Verify it offline with any JOSE library against \`${base}${JWKS_PATH}\` (the current and ` +
      'retired keys, `kid` = RFC 7638 thumbprint), then compare its digests with your own of the ' +
      'input and the result.',
    `Or for free: \`POST ${base}${RECEIPTS_VERIFY_PATH}\` with \`{"receipt": …, "input": …, ` +
      '"result": …}` (input and result optional) answers whether the signature is ours, whether ' +
      'the digests match and, given the input, whether running the tool again gives the result.',
    `The official x402 \`${OFFER_RECEIPT}\` extension is served too: signed offers in every 402's ` +
      `\`extensions["${OFFER_RECEIPT}"].info.offers\` and, after a settlement over HTTP, a signed receipt ` +
      `(network, resourceUrl, payer, issuedAt, transaction) in the SettleResponse's ` +
      `\`extensions["${OFFER_RECEIPT}"].info.receipt\`; their \`kid\` is a did:web key URL resolved ` +
      `through \`${base}${didDocumentPath(base)}\`.`,
  ]
}

/**
 * How an MCP client that cannot sign x402 payments (stdio or plain Streamable HTTP only) uses the
 * tools through the paying stdio bridge, as Markdown list items without markers.
 *
 * @param base - public base URL, without trailing slash
 */
export function mcpBridgeSteps(base: string): string[] {
  const caps = Object.entries(MCP_BRIDGE.caps)
    .map(
      ([name, value]) => `\`${name}\` (${value === undefined ? 'optional' : `default ${value}`})`,
    )
    .join(', ')
  return [
    `Run the npm package \`${MCP_BRIDGE.package}\` as a local MCP server over stdio ` +
      `(\`npx -y ${MCP_BRIDGE.package}\` in the client's \`mcpServers\`) with ` +
      `\`${MCP_BRIDGE.urlVariable}=${base}\`. It lists the same tools and pays each \`tools/call\` ` +
      'itself with the official x402 client, then returns the result with the settlement.' +
      (MCP_BRIDGE.published
        ? ''
        : ' The package is not on npm yet, so `npx` fails until it is published: until then, in a ' +
          'clone of the service repository `npm install` builds it and the `mcpServers` entry is ' +
          `\`"command": "node", "args": ["<clone>/${MCP_BRIDGE.cloneBin}"]\`, or install the ` +
          `tarball \`npm pack -w ${MCP_BRIDGE.package}\` writes (\`${MCP_BRIDGE.tarball}\`).`),
    `The wallet: \`${MCP_BRIDGE.evmKeyVariable}\` (Base) and/or ` +
      `\`${MCP_BRIDGE.solanaKeyVariable}\` (Solana), never logged or sent anywhere.`,
    `Spend caps in USDC, checked before anything is signed: ${caps} per call, session and UTC ` +
      `day. The free local tool \`${MCP_BRIDGE.spendTool}\` reports what was spent.`,
  ]
}

/**
 * A short how-to-pay for machines that read one paragraph (OpenAPI `info.x-guidance`).
 *
 * @param base - public base URL, without trailing slash
 * @param rails - configured rails, in advertising order
 */
export function shortGuidance(base: string, rails: readonly NamedNetwork[]): string {
  return (
    'Every tool is a POST with a JSON body, paid per call with x402 v2 (scheme exact, USDC on ' +
    `${networksInWords(rails, 'or')}). Send the request without payment, read the Base64 ${X402.requiredHeader} ` +
    `header of the 402, sign one of its accepts with an x402 v2 client, and repeat the request ` +
    `with the ${X402.signatureHeader} header. The 402 body's input_check tells whether the body ` +
    'is valid before you pay. Over MCP, pay tools/call with ' +
    `_meta["${X402.mcpPaymentMeta}"] at ${base}${MCP_PATH}. Details: ${base}/llms.txt.`
  )
}
