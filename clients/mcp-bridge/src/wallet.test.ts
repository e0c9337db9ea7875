import { createKeyPairSignerFromPrivateKeyBytes, getBase58Encoder } from '@solana/kit'
import { recoverTypedDataAddress } from 'viem'
import { describe, expect, it } from 'vitest'
import {
  BASE,
  baseOffer,
  paymentRequired,
  SOL,
  solanaOffer,
  TEST_EVM_ADDRESS,
  TEST_EVM_KEY,
} from './test-support/offers.js'
import { chooseOffer, createWallet, NoPayableRailError } from './wallet.js'

describe('chooseOffer (rail choice)', () => {
  const both = [baseOffer(), solanaOffer()]

  it("follows the service's order without a preference", () => {
    expect(chooseOffer(both, ['base', 'solana']).network).toBe(BASE)
    expect(chooseOffer([solanaOffer(), baseOffer()], ['base', 'solana']).network).toBe(SOL)
  })

  it('takes the preferred rail when it is offered, else the other one', () => {
    expect(chooseOffer(both, ['base', 'solana'], 'solana').network).toBe(SOL)
    expect(chooseOffer(both, ['base', 'solana'], 'base').network).toBe(BASE)
    expect(chooseOffer([baseOffer()], ['base', 'solana'], 'solana').network).toBe(BASE)
  })

  it('takes only rails the wallet holds a key for', () => {
    expect(chooseOffer(both, ['solana']).network).toBe(SOL)
    expect(chooseOffer(both, ['base']).network).toBe(BASE)
  })

  it('skips offers that are not exact USDC with an integer amount', () => {
    const fake = baseOffer('1000', { asset: '0x0000000000000000000000000000000000000001' })
    const upto = baseOffer('1000', { scheme: 'upto' })
    const decimal = baseOffer('0.001')
    expect(chooseOffer([fake, upto, decimal, solanaOffer()], ['base', 'solana']).network).toBe(SOL)
  })

  it('explains an offer it cannot pay, naming what was offered and the key to set', () => {
    expect(() => chooseOffer([baseOffer()], ['solana'])).toThrow(
      new NoPayableRailError(
        'The service offers Base (eip155:8453); this wallet pays USDC with scheme exact on ' +
          'Solana only. To pay on Base, set PAYER_PRIVATE_KEY. Nothing was signed.',
      ),
    )
    const offers = [
      baseOffer('1000', { asset: '0x0000000000000000000000000000000000000001' }),
      { ...baseOffer(), network: 'eip155:1' as const },
      solanaOffer('1000', { scheme: 'upto' }),
    ]
    expect(() => chooseOffer(offers, ['base', 'solana'])).toThrow(
      'The service offers Base (eip155:8453), not USDC; eip155:1; Solana (' +
        `${SOL}), scheme upto; this wallet pays USDC with scheme exact on Base and Solana only. ` +
        'Nothing was signed.',
    )
    expect(() => chooseOffer([], ['base'])).toThrow(/^The service offers nothing;/)
  })
})

describe('createWallet', () => {
  const keys = { solanaRpcUrl: 'http://127.0.0.1:1', perCallCap: 10_000n }

  it('holds the rails of the keys it was given', async () => {
    expect((await createWallet({ ...keys, evmPrivateKey: TEST_EVM_KEY })).rails).toEqual(['base'])
    const seed = new Uint8Array(32).fill(7)
    const signer = await createKeyPairSignerFromPrivateKeyBytes(seed)
    const secret = new Uint8Array([...seed, ...getBase58Encoder().encode(signer.address)])
    expect((await createWallet({ ...keys, solanaSecretKey: secret })).rails).toEqual(['solana'])
  })

  it('signs an EIP-3009 authorization for exactly the offer, with the official client', async () => {
    const wallet = await createWallet({ ...keys, evmPrivateKey: TEST_EVM_KEY })
    const offer = baseOffer('1000')
    const payload = await wallet.sign(paymentRequired([offer, solanaOffer()]), offer)
    expect(payload.x402Version).toBe(2)
    expect(payload.accepted).toEqual(offer)
    const { authorization, signature } = payload.payload as {
      authorization: Record<string, string>
      signature: `0x${string}`
    }
    expect(authorization).toMatchObject({ from: TEST_EVM_ADDRESS, to: offer.payTo, value: '1000' })
    const signer = await recoverTypedDataAddress({
      domain: {
        name: 'USD Coin',
        version: '2',
        chainId: 8453,
        verifyingContract: offer.asset as `0x${string}`,
      },
      types: {
        TransferWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'TransferWithAuthorization',
      message: {
        from: authorization.from as `0x${string}`,
        to: authorization.to as `0x${string}`,
        value: BigInt(authorization.value as string),
        validAfter: BigInt(authorization.validAfter as string),
        validBefore: BigInt(authorization.validBefore as string),
        nonce: authorization.nonce as `0x${string}`,
      },
      signature,
    })
    expect(signer).toBe(TEST_EVM_ADDRESS)
  })

  it("refuses, in the SDK's own spend controls too, to sign above the per-call cap", async () => {
    const wallet = await createWallet({ ...keys, evmPrivateKey: TEST_EVM_KEY, perCallCap: 999n })
    const offer = baseOffer('1000')
    await expect(wallet.sign(paymentRequired([offer]), offer)).rejects.toThrow(
      /rejected by spendControls\.allowedAssets maxAmountPerPayment/,
    )
    const fits = baseOffer('999')
    await expect(wallet.sign(paymentRequired([fits]), fits)).resolves.toMatchObject({
      accepted: fits,
    })
  })
})
