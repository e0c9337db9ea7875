import { JWKS_PATH, RECEIPTS_VERIFY_PATH } from '../../receipts/index.js'
import { formatBytes } from '../../tools/limits.js'
import type { ToolDefinition } from '../../tools/types.js'
import type { ErrorCodeDoc } from '../error-codes.js'
import { toolExample } from '../examples.js'
import { LIMITS_DOC, type LimitDoc, limitLines } from '../limits.js'
import { MCP_CATALOG_PATH, SERVER_CARD_PATH } from '../mcp/server-card.js'
import {
  MCP_PATH,
  MCP_PROTOCOL_VERSIONS,
  SERVICE,
  serviceSummary,
  toolPrice,
} from '../service-info.js'
import {
  type GuidedRail,
  httpPaymentSteps,
  mcpBridgeSteps,
  mcpPaymentSteps,
  receiptSteps,
  voucherPaymentSteps,
} from './guidance.js'

export interface LlmsTxtOptions {
  tools: readonly ToolDefinition[]
  publicBaseUrl: string
  errorCodes: readonly ErrorCodeDoc[]
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number
  /** The service-wide limits of this deployment (body, run time, admission). */
  limits: readonly LimitDoc[]
  /** Configured rails, in advertising order: the summary and the steps name their networks. */
  rails: readonly GuidedRail[]
  /**
   * Prepaid channels (`batch-settlement` on Base) are configured: a section says how to pay by
   * voucher (whether they are offered right now is for `/capabilities` to say).
   */
  channels?: boolean
}

/** Prefix of the line that carries a tool's example body; tests find the examples by it. */
export const EXAMPLE_PREFIX = 'Example body: '

/**
 * Inline code span of any text: the fence is one backtick longer than the longest backtick run
 * inside (CommonMark 6.1), padded when the text starts or ends with a backtick.
 */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : ''
  return `${fence}${pad}${text}${pad}${fence}`
}

/** Single-quoted shell word (POSIX): `'` becomes `'\''`. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`
}

/** The unpaid curl call of the first tool, as one paragraph, or nothing without tools. */
function curlExample(base: string, tool: ToolDefinition | undefined): string[] {
  if (!tool) return []
  const body = JSON.stringify(toolExample(tool).body)
  const command =
    `curl -i -X POST ${base}${tool.path} -H 'Content-Type: application/json' ` +
    `-d ${shellQuote(body)}`
  return [`Try it: ${code(command)} answers 402; an x402 client pays and repeats it.`]
}

/** The heading of the `@x402/fetch` snippets; the end-to-end test runs the code under it. */
export const FETCH_SNIPPETS_HEADING = '## Paying from JavaScript: @x402/fetch'

/**
 * One snippet per configured rail family (the first rail of each): the official `@x402/fetch`
 * client with the rail's `exact` scheme, paying for the first tool's example, as an ES module that
 * runs as written on Node 20 (keys from the environment).
 */
function fetchSnippets(
  base: string,
  tool: ToolDefinition | undefined,
  rails: readonly GuidedRail[],
): string[] {
  if (!tool) return []
  const call = [
    'const payingFetch = wrapFetchWithPayment(fetch, client)',
    `const res = await payingFetch('${base}${tool.path}', {`,
    "  method: 'POST',",
    "  headers: { 'Content-Type': 'application/json' },",
    `  body: JSON.stringify(${JSON.stringify(toolExample(tool).body)}),`,
    '})',
    'console.log(res.status, JSON.stringify(await res.json()))',
  ]
  const evm = rails.find((r) => r.network.startsWith('eip155:'))
  const svm = rails.find((r) => r.network.startsWith('solana:'))
  const lines: string[] = []
  if (evm) {
    lines.push(
      `${evm.name} (\`npm install @x402/fetch @x402/evm viem\`; \`PAYER_PRIVATE_KEY\`: the payer's hex key):`,
      '',
      '```js',
      "import { wrapFetchWithPayment, x402Client } from '@x402/fetch'",
      "import { ExactEvmScheme } from '@x402/evm/exact/client'",
      "import { privateKeyToAccount } from 'viem/accounts'",
      '',
      'const signer = privateKeyToAccount(process.env.PAYER_PRIVATE_KEY)',
      'const client = new x402Client()',
      `client.register('${evm.network}', new ExactEvmScheme(signer))`,
      ...call,
      '```',
      '',
    )
  }
  if (svm) {
    lines.push(
      `${svm.name} (\`npm install @x402/fetch @x402/svm @solana/kit\`; \`PAYER_SOLANA_SECRET_KEY\`: ` +
        "the payer's 64-byte key in base58). `@x402/svm` needs an RPC URL (`SOLANA_RPC_URL`): the " +
        "client reads the mint and a recent blockhash from it; without `rpcUrl` it uses the network's " +
        'public Solana endpoint, which cannot see a local devnet.',
      '',
      '```js',
      "import { createKeyPairSignerFromBytes, getBase58Encoder } from '@solana/kit'",
      "import { wrapFetchWithPayment, x402Client } from '@x402/fetch'",
      "import { ExactSvmScheme } from '@x402/svm/exact/client'",
      '',
      'const key = getBase58Encoder().encode(process.env.PAYER_SOLANA_SECRET_KEY)',
      'const signer = await createKeyPairSignerFromBytes(key)',
      'const client = new x402Client()',
      `client.register('${svm.network}', new ExactSvmScheme(signer, { rpcUrl: process.env.SOLANA_RPC_URL }))`,
      ...call,
      '```',
      '',
    )
  }
  if (lines.length === 0) return []
  return [
    FETCH_SNIPPETS_HEADING,
    '',
    'Each snippet is an ES module (save it as `pay.mjs`, run `node pay.mjs`): the client answers ' +
      'the 402, signs for the rail it registered, repeats the request and prints `200` and the ' +
      'result.',
    '',
    ...lines,
  ]
}

/**
 * The JavaScript snippets of an llms.txt built by {@link buildLlmsTxt}, in rail order: the code of
 * each ```js fence under {@link FETCH_SNIPPETS_HEADING}.
 *
 * @example llmsSnippets(text)[0].split('\n')[0] // "import { wrapFetchWithPayment, x402Client } from '@x402/fetch'"
 */
export function llmsSnippets(text: string): string[] {
  const start = text.indexOf(`\n${FETCH_SNIPPETS_HEADING}\n`)
  if (start < 0) return []
  const end = text.indexOf('\n## ', start + 1)
  const section = text.slice(start, end < 0 ? undefined : end)
  return [...section.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string)
}

/**
 * Builds /llms.txt (llmstxt.org format: an H1, a blockquote summary, details, then H2 sections of
 * link lists): what the service does, each tool with its price and one example body, how to pay
 * over HTTP and MCP, the error codes, and links.
 *
 * Each tool section has exactly one line starting with {@link EXAMPLE_PREFIX} followed by the JSON
 * body as an inline code span, so a test can extract and pay for every example.
 *
 * @example
 * buildLlmsTxt({ tools: catalog, publicBaseUrl, errorCodes, maxBodyBytes, limits, rails })
 *   .split('\n')[0] // '# Payload Tools'
 */
export function buildLlmsTxt(options: LlmsTxtOptions): string {
  const base = options.publicBaseUrl
  const lines: string[] = [
    `# ${SERVICE.name}`,
    '',
    `> ${serviceSummary(options.tools, options.rails)}`,
    '',
    'No AI model and no upstream call: every result is a deterministic function of the input. ' +
      'Payload contents and raw payer addresses are never stored. Every tool is `POST <path>` with ' +
      `a JSON body (at most ${formatBytes(options.maxBodyBytes)}) and answers \`{ok: true, result}\`; ` +
      'failures are `{ok: false, error, code, request_id}` (`request_id` is also the `X-Request-Id` ' +
      'header of every response: quote it when reporting a problem). Listing and discovery are free.',
    '',
    '## Tools',
    '',
  ]
  for (const tool of options.tools) {
    const price = toolPrice(tool)
    const example = JSON.stringify(toolExample(tool).body)
    lines.push(
      `- [POST ${tool.path}](${base}/openapi.json): ${tool.title}. ${tool.description} ` +
        `Price ${price.usdc} USDC (\`${price.atomic}\` atomic units). MCP tool \`${tool.mcpName}\`, ` +
        `OpenAPI operation \`${tool.operationId}\`.`,
      `  ${EXAMPLE_PREFIX}${code(example)}`,
    )
    for (const limit of tool.limits) lines.push(`  Limit: ${limit}`)
  }
  lines.push(
    '',
    '## Paying over HTTP (x402 v2)',
    '',
    ...httpPaymentSteps(options.rails).map((step, i) => `${i + 1}. ${step}`),
    '',
    ...curlExample(base, options.tools[0]),
    '',
    ...fetchSnippets(base, options.tools[0], options.rails),
    ...(options.channels
      ? [
          '## Paying by voucher: prepaid channels on Base',
          '',
          ...voucherPaymentSteps(base).map((step) => `- ${step}`),
          '',
        ]
      : []),
    '## Paying over MCP',
    '',
    ...mcpPaymentSteps(base).map((step, i) => `${i + 1}. ${step}`),
    '',
    '## Receipts: proof of delivery',
    '',
    ...receiptSteps(base).map((step) => `- ${step}`),
    '',
    '## MCP clients that cannot pay: the stdio bridge',
    '',
    ...mcpBridgeSteps(base).map((step) => `- ${step}`),
    '',
    '## Limits',
    '',
    ...limitLines(options.limits).map((line) => `- ${line}`),
    '- Per tool: the `Limit:` lines of each tool above; each is checked before the tool runs.',
    '',
    `Every limit, with its configuration variable and error code, is listed in \`${LIMITS_DOC}\` ` +
      'of the service sources.',
    '',
    '## Error codes',
    '',
    ...options.errorCodes.map(
      (c) =>
        `- \`${c.code}\` (${c.status}${c.source === 'service' ? '' : `, ${c.source}`}): ${c.meaning}`,
    ),
    '',
    '## Links',
    '',
    `- [OpenAPI 3.1](${base}/openapi.json): schemas, examples, prices (\`x-payment-info\`)`,
    `- [Capabilities](${base}/capabilities): rails live right now, limits, tools`,
    `- [x402 discovery](${base}/.well-known/x402): the paid resources`,
    `- [MCP server card](${base}${SERVER_CARD_PATH}) (experimental, SEP-2127 draft): where and how to connect to \`${MCP_PATH}\`; [MCP Catalog](${base}${MCP_CATALOG_PATH}) points at it`,
    `- [MCP endpoint](${base}${MCP_PATH}): Streamable HTTP, protocol versions ${MCP_PROTOCOL_VERSIONS.join(', ')} (2026-07-28 without initialize: call server/discover)`,
    `- [Statistics](${base}/stats): aggregate paid usage and the part paid through prepaid channels; 24-hour and 7-day windows exact to the UTC hour`,
    `- [Health](${base}/health)`,
    `- [Receipt keys](${base}${JWKS_PATH}): JWKS of the receipt signing keys, current and retired`,
    `- [Receipt verification](${base}${RECEIPTS_VERIFY_PATH}): POST a receipt, and optionally the input and result`,
    '',
    '## Optional',
    '',
    '- [x402 specification](https://github.com/x402-foundation/x402/blob/main/specs/x402-specification-v2.md)',
    '- [x402 HTTP transport](https://github.com/x402-foundation/x402/blob/main/specs/transports-v2/http.md)',
    '- [x402 MCP transport](https://github.com/x402-foundation/x402/blob/main/specs/transports-v2/mcp.md)',
    '',
  )
  return lines.join('\n')
}

/** One example of an llms.txt: the tool path and its request body. */
export interface LlmsExample {
  /** HTTP path of the tool, e.g. "/hash". */
  path: string
  body: unknown
}

/**
 * The examples of an llms.txt built by {@link buildLlmsTxt}, in tool order: the inverse of its
 * `- [POST <path>](…)` and `Example body:` lines (the end-to-end test pays for each).
 *
 * @example
 * llmsExamples(await (await fetch(`${base}/llms.txt`)).text())[0]
 * // { path: '/hash', body: { input: 'hello world', algorithm: 'SHA-256' } }
 * @throws {SyntaxError} when an example line does not hold JSON
 */
export function llmsExamples(text: string): LlmsExample[] {
  const examples: LlmsExample[] = []
  let path: string | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    const tool = /^- \[POST (\/[^\]]*)\]\(/.exec(line)
    if (tool) path = tool[1]
    if (!line.startsWith(EXAMPLE_PREFIX) || path === undefined) continue
    const span = line.slice(EXAMPLE_PREFIX.length)
    const fence = /^`+/.exec(span)?.[0] ?? ''
    examples.push({
      path,
      body: JSON.parse(span.slice(fence.length, span.length - fence.length).trim()),
    })
    path = undefined
  }
  return examples
}
