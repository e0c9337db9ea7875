import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseSigningKey } from './keys.js'
import { buildDidDocument, buildJwks, didDocumentPath, didWeb } from './publish.js'

const publicJwk = () =>
  parseSigningKey(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  ).publicJwk

describe('didWeb and didDocumentPath (W3C did:web)', () => {
  it('encodes the port, appends path segments, and serves the document where did:web looks', () => {
    expect(didWeb('https://tools.example')).toBe('did:web:tools.example')
    expect(didWeb('http://127.0.0.1:8402')).toBe('did:web:127.0.0.1%3A8402')
    expect(didWeb('https://example.com/tools/v1')).toBe('did:web:example.com:tools:v1')
    expect(didDocumentPath('https://tools.example')).toBe('/.well-known/did.json')
    expect(didDocumentPath('http://127.0.0.1:8402/')).toBe('/.well-known/did.json')
    expect(didDocumentPath('https://example.com/tools')).toBe('/did.json')
  })
})

describe('buildJwks and buildDidDocument', () => {
  const current = publicJwk()
  const retired = [publicJwk(), publicJwk()]

  it('lists the current key first, then the retired ones, once each', () => {
    expect(buildJwks(current, [retired[0], current, retired[1]] as never).keys).toEqual([
      current,
      retired[0],
      retired[1],
    ])
  })

  it('makes every key a JsonWebKey2020 assertion method of the DID', () => {
    const did = 'did:web:tools.example'
    const document = buildDidDocument(did, buildJwks(current, retired))
    expect(document.id).toBe(did)
    expect(document.verificationMethod).toEqual(
      [current, ...retired].map((k) => ({
        id: `${did}#${k.kid}`,
        type: 'JsonWebKey2020',
        controller: did,
        publicKeyJwk: { kty: 'OKP', crv: 'Ed25519', x: k.x },
      })),
    )
    expect(document.assertionMethod).toEqual([current, ...retired].map((k) => `${did}#${k.kid}`))
  })
})
