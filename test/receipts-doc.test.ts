import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import canonicalize from 'canonicalize'
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { deliveryClaimsSchema, verifyAnswerJsonSchema } from '../src/receipts/index.js'
import { hashTool } from '../src/tools/hash.js'

// docs/receipts.md must stay true: its tables name exactly the claims and the reasons of the code,
// and its worked example (copied from a devnet run) verifies offline with its own recipe.

const doc = readFileSync(new URL('../docs/receipts.md', import.meta.url), 'utf8')

/** The first fenced block of `language` after `marker`. */
function blockAfter(marker: string, language: string): string {
  const from = doc.indexOf(marker)
  expect(from, marker).toBeGreaterThan(-1)
  const open = doc.indexOf(`\`\`\`${language}\n`, from)
  const close = doc.indexOf('\n```', open + 1)
  return doc.slice(open + language.length + 4, close)
}

/** The first column of the Markdown table whose header starts with `| <header> |`. */
function firstColumn(header: string): string[] {
  const table = doc.slice(doc.indexOf(`| ${header} |`)).split('\n\n')[0] as string
  return table
    .split('\n')
    .slice(2)
    .map((row) => /^\| `([^`]+)` \|/.exec(row)?.[1] as string)
}

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')

describe('docs/receipts.md', () => {
  it('lists exactly the claims of a delivery receipt, in order', () => {
    expect(firstColumn('Claim')).toEqual(Object.keys(deliveryClaimsSchema.shape))
  })

  it('lists exactly the reasons /receipts/verify gives', () => {
    expect(firstColumn('`reason` (when `valid` is false)')).toEqual(
      verifyAnswerJsonSchema.properties.reason.enum,
    )
  })

  it('has a worked example that verifies offline with jose and its JWKS, digests included', async () => {
    const answer = JSON.parse(blockAfter('The answer:', 'json')) as { result: unknown }
    const jwks = JSON.parse(blockAfter("The service's JWKS", 'json')) as JSONWebKeySet
    const receipt = blockAfter('The delivery receipt, from', 'text').trim()
    const claims = JSON.parse(blockAfter('and its claims:', 'json')) as Record<string, unknown>

    const { payload, protectedHeader } = await jwtVerify(receipt, createLocalJWKSet(jwks), {
      algorithms: ['EdDSA'],
      typ: 'delivery-receipt+jwt',
      issuer: claims.iss as string,
    })
    expect(payload).toEqual(claims)
    expect(protectedHeader).toEqual(decodeProtectedHeader(receipt))
    expect(doc).toContain(`Its header is \`${JSON.stringify(protectedHeader)}\``)
    // The input as the schema reads {"input":"abc"}, and the result delivered.
    expect(claims.input_sha256).toBe(sha256(hashTool.input.parse({ input: 'abc' })))
    expect(claims.result_sha256).toBe(sha256(answer.result))
    expect(answer).toEqual({
      ok: true,
      result: hashTool.run(hashTool.input.parse({ input: 'abc' }), { nowSeconds: () => 0 }),
    })
    expect(doc).toContain(canonicalize(answer.result) as string)
  })
})
