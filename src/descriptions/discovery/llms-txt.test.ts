import { describe, expect, it } from 'vitest'
import { echoTool, fakeRails } from '../../../test/helpers/fakes.js'
import { catalog } from '../../tools/catalog.js'
import type { ToolDefinition } from '../../tools/types.js'
import { SERVICE_ERROR_CODES, serviceErrorCodes } from '../error-codes.js'
import { serviceLimits } from '../limits.js'
import { buildLlmsTxt, EXAMPLE_PREFIX, llmsExamples, llmsSnippets } from './llms-txt.js'

const BASE = 'https://tools.example'

function build(tools: readonly ToolDefinition[]) {
  return buildLlmsTxt({
    tools,
    publicBaseUrl: BASE,
    errorCodes: serviceErrorCodes(),
    maxBodyBytes: 1024 * 1024,
    limits: serviceLimits({
      maxBodyBytes: 1024 * 1024,
      workers: 2,
      timeoutMs: 2000,
      queueLimit: 4,
    }),
    rails: fakeRails,
  })
}

describe('llms.txt', () => {
  const text = build(catalog)

  it('says how to pay by voucher when prepaid channels are configured, after the HTTP payment', () => {
    expect(text).not.toContain('## Paying by voucher')
    const withChannels = buildLlmsTxt({
      tools: catalog,
      publicBaseUrl: BASE,
      errorCodes: serviceErrorCodes(),
      maxBodyBytes: 1024 * 1024,
      limits: [],
      rails: fakeRails,
      channels: true,
    })
    const headings = withChannels.split('\n').filter((l) => l.startsWith('## '))
    expect(headings.slice(2, 5)).toEqual([
      '## Paying from JavaScript: @x402/fetch',
      '## Paying by voucher: prepaid channels on Base',
      '## Paying over MCP',
    ])
    const section = withChannels.slice(
      withChannels.indexOf('## Paying by voucher'),
      withChannels.indexOf('## Paying over MCP'),
    )
    for (const fact of [
      '`extra.minDeposit`',
      '`BatchSettlementEvmScheme` from `@x402/evm/batch-settlement/client`',
      'toClientEvmSigner(account, publicClient)',
      '`invalid_batch_settlement_evm_cumulative_amount_mismatch`',
      '`invalid_batch_settlement_evm_channel_busy`',
      `\`scheme.refund("${BASE}/<tool path>")\``,
    ]) {
      expect(section, fact).toContain(fact)
    }
    expect(
      section
        .trimEnd()
        .split('\n')
        .filter((l) => l.startsWith('- ')),
    ).toHaveLength(4)
  })

  it('follows the llmstxt.org layout: H1, blockquote, then H2 sections', () => {
    const lines = text.split('\n')
    expect(lines[0]).toBe('# Payload Tools')
    expect(lines[2]).toMatch(/^> 8 deterministic payload utilities \(Hash, Base64, /)
    expect(lines.filter((l) => l.startsWith('## '))).toEqual([
      '## Tools',
      '## Paying over HTTP (x402 v2)',
      '## Paying from JavaScript: @x402/fetch',
      '## Paying over MCP',
      '## Receipts: proof of delivery',
      '## MCP clients that cannot pay: the stdio bridge',
      '## Limits',
      '## Error codes',
      '## Links',
      '## Optional',
    ])
    expect(lines.filter((l) => l.startsWith('# '))).toHaveLength(1)
  })

  it('gives one @x402/fetch snippet per rail: client, register, wrap, call', () => {
    const snippets = llmsSnippets(text)
    expect(snippets).toHaveLength(2)
    const [evm, svm] = snippets as [string, string]
    for (const snippet of snippets) {
      expect(snippet).toContain("import { wrapFetchWithPayment, x402Client } from '@x402/fetch'")
      expect(snippet).toContain('const client = new x402Client()')
      expect(snippet).toContain('const payingFetch = wrapFetchWithPayment(fetch, client)')
      expect(snippet).toContain(`await payingFetch('${BASE}/hash', {`)
      expect(snippet).toContain(
        'body: JSON.stringify({"input":"hello world","algorithm":"SHA-256"})',
      )
      expect(snippet.split('\n').length).toBeLessThanOrEqual(18)
    }
    expect(evm).toContain("import { ExactEvmScheme } from '@x402/evm/exact/client'")
    expect(evm).toContain("client.register('eip155:8453', new ExactEvmScheme(signer))")
    expect(svm).toContain("import { ExactSvmScheme } from '@x402/svm/exact/client'")
    expect(svm).toContain(
      "client.register('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', new ExactSvmScheme(signer, { rpcUrl: process.env.SOLANA_RPC_URL }))",
    )
    expect(text).toContain('`@x402/svm` needs an RPC URL (`SOLANA_RPC_URL`)')
  })

  it('describes the delivery receipt, its claims, the JWKS and the free verification', () => {
    const section = text.slice(
      text.indexOf('## Receipts: proof of delivery'),
      text.indexOf('## MCP clients that cannot pay'),
    )
    for (const claim of ['iss', 'iat', 'resource', 'tool', 'input_sha256', 'result_sha256']) {
      expect(section).toContain(`\`${claim}\``)
    }
    for (const claim of ['network', 'asset', 'amount', 'pay_to', 'transaction']) {
      expect(section).toContain(`\`${claim}\``)
    }
    expect(section).toContain('extensions["delivery-receipt"].info.receipt')
    expect(section).toContain(`${BASE}/.well-known/jwks.json`)
    expect(section).toContain(`POST ${BASE}/receipts/verify`)
    expect(section).toContain(`${BASE}/.well-known/did.json`)
  })

  it('lists every tool with its price, MCP name and first example body', () => {
    expect(llmsExamples(text)).toEqual(
      catalog.map((tool) => ({ path: tool.path, body: tool.examples[0] })),
    )
    for (const tool of catalog) {
      const line = text.split('\n').find((l) => l.startsWith(`- [POST ${tool.path}](`))
      expect(line, tool.id).toContain(`MCP tool \`${tool.mcpName}\``)
      expect(line).toContain(`OpenAPI operation \`${tool.operationId}\``)
      expect(line).toContain(
        `Price ${tool.price === '1000' ? '0.001' : '0.003'} USDC (\`${tool.price}\` atomic units)`,
      )
    }
  })

  it('explains both ways to pay', () => {
    expect(text).toContain('`PAYMENT-REQUIRED` header')
    expect(text).toContain('`PAYMENT-SIGNATURE` header')
    expect(text).toContain('`params._meta["x402/payment"]`')
    expect(text).toContain(
      "Try it: `curl -i -X POST https://tools.example/hash -H 'Content-Type: application/json' " +
        `-d '{"input":"hello world","algorithm":"SHA-256"}'\``,
    )
  })

  it('states the service-wide limits with their variables and codes, and where the rest are', () => {
    const section = text.slice(text.indexOf('## Limits'), text.indexOf('## Error codes'))
    expect(section.split('\n')).toEqual([
      '## Limits',
      '',
      '- Request body (HTTP and MCP): 1 MiB; beyond it `payload_too_large`.',
      '- Run time of one tool call: 2000 ms (`TOOL_TIMEOUT_MS`); beyond it `tool_timeout`.',
      '- Tool calls running or queued at once, for a new paid call to be admitted: 6, 2 workers + 4 ' +
        'queued (`TOOL_WORKERS`, `TOOL_QUEUE_LIMIT`); beyond it `overloaded`.',
      '- Per tool: the `Limit:` lines of each tool above; each is checked before the tool runs.',
      '',
      'Every limit, with its configuration variable and error code, is listed in `docs/limits.md` ' +
        'of the service sources.',
      '',
      '',
    ])
  })

  it('points MCP clients that cannot pay to the stdio bridge, with its caps', () => {
    expect(text).toContain(
      '- Run the npm package `payload-tools-mcp` as a local MCP server over stdio ' +
        "(`npx -y payload-tools-mcp` in the client's `mcpServers`) with " +
        '`PAYLOAD_TOOLS_URL=https://tools.example`. It lists the same tools and pays each ' +
        '`tools/call` itself with the official x402 client, then returns the result with the ' +
        'settlement. The package is not on npm yet, so `npx` fails until it is published: until ' +
        'then, in a clone of the service repository `npm install` builds it and the `mcpServers` ' +
        'entry is `"command": "node", "args": ["<clone>/clients/mcp-bridge/dist/bin.js"]`, or ' +
        'install the tarball `npm pack -w payload-tools-mcp` writes (`payload-tools-mcp-0.1.0.tgz`).',
    )
    expect(text).toContain(
      '`MAX_USDC_PER_CALL` (default 0.01), `MAX_USDC_PER_SESSION` (default 0.10), ' +
        '`MAX_USDC_PER_DAY` (optional)',
    )
    expect(text).toContain('`payload_tools_spend`')
  })

  it('lists every service error code with its status', () => {
    for (const [code, { status, meaning }] of Object.entries(SERVICE_ERROR_CODES)) {
      expect(text).toContain(`- \`${code}\` (${status}): ${meaning}`)
    }
  })

  it('fences an example that holds backticks and quotes a shell-unsafe body', () => {
    const tricky: ToolDefinition = {
      ...(echoTool as unknown as ToolDefinition),
      examples: [{ text: "it's `x`" }],
    }
    const out = build([tricky])
    expect(out).toContain(`${EXAMPLE_PREFIX}\`\`{"text":"it's \`x\`"}\`\``)
    expect(llmsExamples(out)).toEqual([{ path: '/echo', body: { text: "it's `x`" } }])
    expect(out).toContain(`-d '{"text":"it'\\''s \`x\`"}'`)
  })
})
