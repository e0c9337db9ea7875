import { toolExample } from '../../descriptions/examples.js'
import { bridgeLaunch, MCP_BRIDGE, MCP_PATH, X402 } from '../../descriptions/service-info.js'
import { STAGE_NETWORKS } from '../../payment/networks.js'
import type { Rail } from '../../payment/rails.js'
import {
  DELIVERY_RECEIPT,
  DELIVERY_RECEIPT_TYPE,
  JWKS_PATH,
  RECEIPTS_VERIFY_PATH,
} from '../../receipts/index.js'
import type { ToolDefinition } from '../../tools/types.js'

/** One quick-start step: a heading, a sentence, and a code block (plain text, unescaped). */
export interface QuickStartStep {
  id: string
  title: string
  /** Plain text; `backticks` mark inline code. */
  text: string
  /** Language label of the code block. */
  language: 'shell' | 'typescript' | 'json'
  code: string
}

/** Single-quoted shell word (POSIX): `'` becomes `'\''`. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`
}

/**
 * The quick start of the landing page: an unpaid curl call that shows the 402, a paid call with
 * the official `@x402/fetch` client, the check of its signed receipt, the MCP endpoint, all for the first catalogue tool and its
 * canonical example body, and the paying stdio bridge for MCP clients that cannot sign x402.
 *
 * @param base - public base URL, without trailing slash
 * @param tools - the catalogue; the first tool is the example
 * @param rails - configured rails: the client registers the EVM rail's network (Base, or Base
 *   Sepolia on the testnet stage); Base without one. The hint to pay on Solana with `@x402/svm`
 *   is left out where rails are given and none is Solana.
 * @throws {Error} when the catalogue is empty or its first example is invalid (a catalogue bug)
 */
export function quickStartSteps(
  base: string,
  tools: readonly ToolDefinition[],
  rails: readonly Pick<Rail, 'id' | 'network'>[] = [],
): QuickStartStep[] {
  const tool = tools[0]
  if (!tool) throw new Error('the landing page needs at least one tool')
  const evmNetwork =
    rails.find((rail) => rail.id === 'evm')?.network ?? STAGE_NETWORKS.mainnet.evm.network
  // Solana is named only where the service offers it (not on a Base-only service).
  const solanaToo = rails.length === 0 || rails.some((rail) => rail.id === 'solana')
  const body = JSON.stringify(toolExample(tool).body)
  const url = `${base}${tool.path}`
  return [
    {
      id: 'curl',
      title: 'See the price with curl',
      text:
        `Call any tool without paying. The answer is \`402\` with a \`${X402.requiredHeader}\` ` +
        'header: Base64 JSON listing one `exact` USDC offer per rail, with amount, asset and payTo.',
      language: 'shell',
      code: [
        `curl -i -X POST ${url} \\`,
        `  -H 'Content-Type: application/json' \\`,
        `  -d ${shellQuote(body)}`,
        '',
        '# HTTP/1.1 402 Payment Required',
        `# ${X402.requiredHeader}: eyJ4NDAyVmVyc2lvbiI6Mi…`,
      ].join('\n'),
    },
    {
      id: 'fetch',
      title: 'Pay per call with @x402/fetch',
      text:
        'The official x402 client answers the 402 for you: it signs a USDC payment, repeats the ' +
        `request with \`${X402.signatureHeader}\`, and returns the 200 with its receipt in ` +
        `\`${X402.responseHeader}\`.${solanaToo ? ' Use `@x402/svm` to pay on Solana instead.' : ''}`,
      language: 'typescript',
      code: [
        `import { ExactEvmScheme } from '@x402/evm/exact/client'`,
        `import { wrapFetchWithPayment, x402Client } from '@x402/fetch'`,
        `import { privateKeyToAccount } from 'viem/accounts'`,
        '',
        'const client = new x402Client()',
        `client.register('${evmNetwork}', new ExactEvmScheme(privateKeyToAccount(process.env.PAYER_KEY)))`,
        'const pay = wrapFetchWithPayment(fetch, client)',
        '',
        `const res = await pay('${url}', {`,
        `  method: 'POST',`,
        `  headers: { 'Content-Type': 'application/json' },`,
        `  body: JSON.stringify(${body}),`,
        '})',
        'const { ok, result } = await res.json() // ok: true, result: { … }',
      ].join('\n'),
    },
    {
      id: 'receipt',
      title: 'Check the signed receipt',
      text:
        'Every paid answer carries a delivery receipt: a JWS signed by the service that binds the ' +
        'SHA-256 of your input and of the result to the payment. Verify it offline with jose ' +
        `against \`${JWKS_PATH}\`, or for free with \`POST ${RECEIPTS_VERIFY_PATH}\`.`,
      language: 'typescript',
      code: [
        `import { decodePaymentResponseHeader } from '@x402/core/http'`,
        `import { createRemoteJWKSet, jwtVerify } from 'jose'`,
        '',
        `const settlement = decodePaymentResponseHeader(res.headers.get('${X402.responseHeader}'))`,
        `const receipt = settlement.extensions['${DELIVERY_RECEIPT}'].info.receipt`,
        `const keys = createRemoteJWKSet(new URL('${base}${JWKS_PATH}'))`,
        `const { payload } = await jwtVerify(receipt, keys, { typ: '${DELIVERY_RECEIPT_TYPE}' })`,
        '// payload.input_sha256, payload.result_sha256: SHA-256 of the RFC 8785 JSON',
        '// of the input (defaults applied) and of the result; tool, amount, transaction…',
      ].join('\n'),
    },
    {
      id: 'mcp',
      title: 'Use the tools over MCP',
      text:
        `Point an MCP client at \`${base}${MCP_PATH}\` (Streamable HTTP, stateless). Listing is ` +
        'free; an unpaid `tools/call` returns the PaymentRequired, and a paid one carries the ' +
        `signed PaymentPayload in \`params._meta["${X402.mcpPaymentMeta}"]\`.`,
      language: 'shell',
      code: [
        `curl -X POST ${base}${MCP_PATH} \\`,
        `  -H 'Content-Type: application/json' \\`,
        `  -H 'Accept: application/json, text/event-stream' \\`,
        `  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`,
        '',
        `# tools/call ${tool.mcpName} with payment:`,
        `# {"method":"tools/call","params":{"name":"${tool.mcpName}","arguments":${body},`,
        `#   "_meta":{"${X402.mcpPaymentMeta}":<PaymentPayload>}}}`,
      ].join('\n'),
    },
    {
      id: 'bridge',
      title: 'Or let a local bridge pay',
      text:
        'MCP clients that cannot sign x402 (desktop assistants, IDE and CLI agents) run ' +
        `\`${MCP_BRIDGE.package}\` over stdio: it lists the same tools and pays each call from ` +
        'your wallet, within hard spend caps. Add it to the `mcpServers` of the client; ' +
        `\`${MCP_BRIDGE.spendTool}\` shows what was spent. ` +
        (MCP_BRIDGE.published
          ? ''
          : 'It is not on npm yet: in a clone of the repository, `npm install` builds it; put the ' +
            `clone's absolute path in \`args\` (or install the tarball \`npm pack -w ` +
            `${MCP_BRIDGE.package}\` writes). After publication: \`"command": "npx", "args": ` +
            `["-y", "${MCP_BRIDGE.package}"]\`.`),
      language: 'json',
      code: JSON.stringify(
        {
          mcpServers: {
            'payload-tools': {
              ...bridgeLaunch(),
              env: {
                [MCP_BRIDGE.urlVariable]: base,
                [MCP_BRIDGE.evmKeyVariable]: '0x…',
                ...Object.fromEntries(
                  Object.entries(MCP_BRIDGE.caps).filter(([, value]) => value !== undefined),
                ),
              },
            },
          },
        },
        null,
        2,
      ),
    },
  ]
}
