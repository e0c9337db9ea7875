import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { afterAll, describe, expect, it } from 'vitest'
import { createCdpApiKey, createPayaiApiKey } from '../devnet/api-keys.js'
import { refusal } from '../devnet/facilitator-auth.js'
import { cdpAuth, cdpKeySecret, facilitatorAuth, payaiAuth, payaiKeySecret } from './auth.js'
import { createFacilitators } from './index.js'

const ec = createCdpApiKey('ec')
const ed = createCdpApiKey('ed25519')
const payai = createPayaiApiKey()

describe('cdpKeySecret', () => {
  it("turns CDP's SEC1 EC key into the PKCS#8 PEM generateJwt reads, the same key", () => {
    const pkcs8 = cdpKeySecret(ec.secret)
    expect(ec.secret).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n/)
    expect(pkcs8).toMatch(/^-----BEGIN PRIVATE KEY-----\n/)
    expect(createPublicKey(pkcs8).export({ format: 'jwk' })).toEqual(
      ec.publicKey.export({ format: 'jwk' }),
    )
    expect(cdpKeySecret(pkcs8)).toBe(pkcs8)
    // A PEM pasted into one env line, with literal \n.
    expect(cdpKeySecret(ec.secret.replaceAll('\n', '\\n'))).toBe(pkcs8)
  })

  it('keeps a base64 Ed25519 key as it is', () => {
    expect(cdpKeySecret(` ${ed.secret}\n`)).toBe(ed.secret)
  })

  it('refuses what is not a CDP key, without quoting it', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString()
    const other = createCdpApiKey('ed25519').secret
    const mismatched = Buffer.concat([
      Buffer.from(ed.secret, 'base64').subarray(0, 32),
      Buffer.from(other, 'base64').subarray(32),
    ]).toString('base64')
    const cases: [string, string][] = [
      [rsa, 'CDP_API_KEY_SECRET is a rsa key; CDP keys are EC P-256 (PEM) or Ed25519 (base64)'],
      [
        'not-a-key',
        'CDP_API_KEY_SECRET is neither an EC private key in PEM nor a base64 Ed25519 key (64 bytes: seed, then public key)',
      ],
      [
        Buffer.alloc(32, 1).toString('base64'),
        'CDP_API_KEY_SECRET is neither an EC private key in PEM nor a base64 Ed25519 key (64 bytes: seed, then public key)',
      ],
      [
        mismatched,
        'CDP_API_KEY_SECRET is not an Ed25519 key: its public half does not match its seed',
      ],
      [
        '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----',
        'CDP_API_KEY_SECRET holds a PEM block that is not a readable private key',
      ],
    ]
    for (const [secret, message] of cases) expect(() => cdpKeySecret(secret)).toThrow(message)
  })
})

describe('payaiKeySecret', () => {
  it('accepts the portal form and the bare base64, and refuses anything else', () => {
    expect(payaiKeySecret(payai.secret)).toBe(payai.secret)
    expect(payaiKeySecret(payai.secret.slice('payai_sk_'.length))).toBe(
      payai.secret.slice('payai_sk_'.length),
    )
    const message =
      'PAYAI_API_KEY_SECRET is not a base64 PKCS#8 Ed25519 private key (optionally prefixed payai_sk_)'
    expect(() => payaiKeySecret(ed.secret)).toThrow(message)
    expect(() => payaiKeySecret('payai_sk_nope')).toThrow(message)
  })
})

describe('cdpAuth', () => {
  const url = 'https://api.cdp.coinbase.com/platform/v2/x402/'
  const host = 'api.cdp.coinbase.com'

  it.each([
    ['EC', ec],
    ['Ed25519', ed],
  ])('signs one JWT per request, bound to its method, host and path (%s key)', async (_, key) => {
    const auth = cdpAuth(url, key)
    const devAuth = { mode: 'cdp' as const, keyId: key.id, publicKey: key.publicKey }
    for (const [endpoint, method] of [
      ['verify', 'POST'],
      ['settle', 'POST'],
      ['supported', 'GET'],
    ] as const) {
      const { Authorization } = (await auth.headersFor?.(endpoint)) ?? {}
      const jwt = Authorization?.replace(/^Bearer /, '') ?? ''
      const path = `/platform/v2/x402/${endpoint}`
      expect(await refusal(devAuth, { method, host, path, authorization: Authorization })).toBe(
        undefined,
      )
      const claims = decodeJwt(jwt)
      expect(claims).toMatchObject({ iss: 'cdp', sub: key.id, uris: [`${method} ${host}${path}`] })
      expect((claims.exp ?? 0) - (claims.nbf ?? 0)).toBe(120)
      expect(decodeProtectedHeader(jwt)).toMatchObject({
        kid: key.id,
        alg: key === ec ? 'ES256' : 'EdDSA',
      })
      // Bound: the same JWT is refused for another endpoint or host.
      expect(
        await refusal(devAuth, {
          method: 'POST',
          host,
          path: '/platform/v2/x402/other',
          authorization: Authorization,
        }),
      ).toMatch(/^uris /)
    }
    const all = await auth.createAuthHeaders?.()
    expect(Object.keys(all ?? {})).toEqual(['verify', 'settle', 'supported'])
  })

  it('is refused by a facilitator that holds another key', async () => {
    const { Authorization } = (await cdpAuth(url, ec).headersFor?.('verify')) ?? {}
    const other = createCdpApiKey('ec')
    const why = await refusal(
      { mode: 'cdp', keyId: ec.id, publicKey: other.publicKey },
      { method: 'POST', host, path: '/platform/v2/x402/verify', authorization: Authorization },
    )
    expect(why).toBe('ERR_JWS_SIGNATURE_VERIFICATION_FAILED: signature verification failed')
  })
})

describe('payaiAuth', () => {
  it("signs PayAI's JWT with the key, the same for every endpoint", async () => {
    const auth = payaiAuth(payai)
    const headers = await auth.createAuthHeaders?.()
    const authorization = headers?.settle?.Authorization
    expect(headers?.verify?.Authorization).toBe(authorization)
    expect(
      await refusal(
        { mode: 'payai', keyId: payai.id, publicKey: payai.publicKey },
        { method: 'POST', host: 'facilitator.payai.network', path: '/settle', authorization },
      ),
    ).toBe(undefined)
  })
})

describe('facilitatorAuth', () => {
  it('needs the keys of its mode, and names them', () => {
    expect(facilitatorAuth('none', 'https://x.example', {})).toEqual({ mode: 'none' })
    expect(() =>
      facilitatorAuth('cdp', 'https://api.cdp.coinbase.com/platform/v2/x402', {}),
    ).toThrow(
      'FACILITATOR_AUTH is cdp for api.cdp.coinbase.com but CDP_API_KEY_ID and CDP_API_KEY_SECRET are not both set',
    )
    expect(() =>
      facilitatorAuth('payai', 'https://facilitator.payai.network', { cdp: ec }),
    ).toThrow(
      'FACILITATOR_AUTH is payai for facilitator.payai.network but PAYAI_API_KEY_ID and PAYAI_API_KEY_SECRET are not both set',
    )
  })
})

describe('createFacilitators over HTTP', () => {
  const servers: Server[] = []
  afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))))

  /** A facilitator that records the Authorization of each request and answers like one. */
  async function recording() {
    const seen: { method: string; path: string; authorization: string | undefined }[] = []
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          path: req.url ?? '',
          authorization: req.headers.authorization,
        })
        const body = req.url?.endsWith('/supported')
          ? {
              kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:8453' }],
              extensions: [],
              signers: {},
            }
          : req.url?.endsWith('/verify')
            ? { isValid: true, payer: '0xabc' }
            : { success: true, transaction: '0x1', network: 'eip155:8453' }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
      })
    })
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    return { seen, host: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}` }
  }

  it('sends each request its own CDP JWT, and the key to no other facilitator', async () => {
    const cdp = await recording()
    const plain = await recording()
    const router = createFacilitators({
      facilitators: [
        { url: `${cdp.url}/platform/v2/x402`, auth: 'cdp' },
        { url: plain.url, auth: 'none' },
      ],
      timeoutMs: 5_000,
      credentials: { cdp: ed },
    })
    if (!router) throw new Error('no router')
    await router.getSupported()
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '1000',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      maxTimeoutSeconds: 60,
      extra: {},
    }
    const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: {} }
    await router.verify(payload, requirements)
    await router.settle(payload, requirements)

    expect(cdp.seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /platform/v2/x402/supported',
      'POST /platform/v2/x402/verify',
      'POST /platform/v2/x402/settle',
    ])
    const devAuth = { mode: 'cdp' as const, keyId: ed.id, publicKey: ed.publicKey }
    for (const r of cdp.seen) {
      expect(await refusal(devAuth, { ...r, host: cdp.host })).toBe(undefined)
    }
    expect(plain.seen.map((r) => [r.path, r.authorization])).toEqual([['/supported', undefined]])
  })
})
