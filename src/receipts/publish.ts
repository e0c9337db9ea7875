import type { PublicJwk } from './keys.js'

/** Path of the JWKS (RFC 7517 section 5) of the receipt keys. */
export const JWKS_PATH = '/.well-known/jwks.json'

/** A JWK Set of the receipt keys: the current key first, then the retired ones. */
export interface ReceiptJwks {
  keys: PublicJwk[]
}

/**
 * The JWKS of the receipt keys: the signing key first, then the retired ones (without the current
 * one again), so that every receipt ever signed with any of them keeps verifying.
 *
 * @example buildJwks(current, [old]) // { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '…', kid: '…', alg: 'EdDSA', use: 'sig' }, {…}] }
 */
export function buildJwks(current: PublicJwk, retired: readonly PublicJwk[]): ReceiptJwks {
  return { keys: [current, ...retired.filter((key) => key.kid !== current.kid)] }
}

/**
 * The `did:web` DID of the service (W3C did:web method): the host of the public base URL, its
 * port percent-encoded, then the path segments, each after a colon.
 *
 * @example didWeb('https://tools.example') // 'did:web:tools.example'
 * @example didWeb('http://127.0.0.1:8402') // 'did:web:127.0.0.1%3A8402'
 * @example didWeb('https://example.com/tools') // 'did:web:example.com:tools'
 */
export function didWeb(publicBaseUrl: string): string {
  const url = new URL(publicBaseUrl)
  const segments = url.pathname.split('/').filter(Boolean).map(encodeURIComponent)
  return ['did', 'web', encodeURIComponent(url.host), ...segments].join(':')
}

/**
 * Where the DID document of {@link didWeb} is served, relative to the public base URL: did:web
 * resolves a bare host to `/.well-known/did.json`, and a host with a path to `<path>/did.json`.
 *
 * @example didDocumentPath('https://tools.example') // '/.well-known/did.json'
 * @example didDocumentPath('https://example.com/tools') // '/did.json'
 */
export function didDocumentPath(publicBaseUrl: string): string {
  return new URL(publicBaseUrl).pathname.replace(/\/+$/, '') === ''
    ? '/.well-known/did.json'
    : '/did.json'
}

/** A DID document (W3C DID Core) listing the receipt keys as JsonWebKey2020 methods. */
export interface DidDocument {
  '@context': string[]
  id: string
  verificationMethod: {
    id: string
    type: 'JsonWebKey2020'
    controller: string
    publicKeyJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string }
  }[]
  assertionMethod: string[]
}

/**
 * The DID document that lets a client of the `offer-receipt` extension resolve the `kid` of an
 * offer or receipt (`did:web:<host>#<thumbprint>`) to its key, as the extension's own
 * `verifyOfferSignatureJWS` and `verifyReceiptSignatureJWS` do. Every key of the JWKS is an
 * assertion method, retired ones included.
 *
 * @example buildDidDocument('did:web:tools.example', jwks).verificationMethod[0].id
 * // 'did:web:tools.example#kPrK_qmx…'
 */
export function buildDidDocument(did: string, jwks: ReceiptJwks): DidDocument {
  const methods = jwks.keys.map(({ kty, crv, x, kid }) => ({
    id: `${did}#${kid}`,
    type: 'JsonWebKey2020' as const,
    controller: did,
    publicKeyJwk: { kty, crv, x },
  }))
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/jws-2020/v1'],
    id: did,
    verificationMethod: methods,
    assertionMethod: methods.map((m) => m.id),
  }
}
