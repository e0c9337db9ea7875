import { join } from 'node:path'
import {
  createKeyPairSignerFromPrivateKeyBytes,
  getBase58Decoder,
  getBase58Encoder,
} from '@solana/kit'
import { describe, expect, it } from 'vitest'
import { ConfigError, DEFAULT_SERVICE_URL, loadConfig, stateDirFrom } from './config.js'
import { TEST_EVM_KEY } from './test-support/offers.js'

const seed = new Uint8Array(32).fill(9)
const signer = await createKeyPairSignerFromPrivateKeyBytes(seed)
const secret = new Uint8Array([...seed, ...getBase58Encoder().encode(signer.address)])
const secretBase58 = getBase58Decoder().decode(secret)

const env = (extra: Record<string, string | undefined> = {}) => ({
  PAYLOAD_TOOLS_URL: 'https://tools.example',
  PAYER_PRIVATE_KEY: TEST_EVM_KEY,
  HOME: '/home/u',
  ...extra,
})

/** The ConfigError of loading `e`; fails when it loads. */
async function refusal(e: Record<string, string | undefined>): Promise<ConfigError> {
  try {
    await loadConfig(e)
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('loaded')
}

describe('PAYLOAD_TOOLS_URL', () => {
  it('has no default until a public deployment is documented, and says how to set it', async () => {
    expect(DEFAULT_SERVICE_URL).toBeUndefined()
    const error = await refusal(env({ PAYLOAD_TOOLS_URL: undefined }))
    expect(error.variable).toBe('PAYLOAD_TOOLS_URL')
    expect(error.message).toMatch(/^PAYLOAD_TOOLS_URL: not set\. Set it to the base URL/)
    expect((await refusal(env({ PAYLOAD_TOOLS_URL: '  ' }))).variable).toBe('PAYLOAD_TOOLS_URL')
  })

  it.each([
    ['https://tools.example', 'https://tools.example'],
    ['https://tools.example/', 'https://tools.example'],
    ['https://tools.example/mcp', 'https://tools.example'],
    ['https://tools.example/api/mcp/', 'https://tools.example/api'],
    ['http://127.0.0.1:8402', 'http://127.0.0.1:8402'],
    ['http://localhost:8402/mcp', 'http://localhost:8402'],
    ['http://[::1]:8402', 'http://[::1]:8402'],
  ])('%s -> service %s', async (raw, base) => {
    const config = await loadConfig(env({ PAYLOAD_TOOLS_URL: raw }))
    expect(config.serviceUrl).toBe(base)
    expect(config.mcpUrl.href).toBe(`${base}/mcp`)
  })

  it.each([
    'http://tools.example',
    'ftp://tools.example',
    'tools.example',
    'https://user:pw@tools.example',
    'https://tools.example/?x=1',
  ])('refuses %s', async (raw) => {
    expect((await refusal(env({ PAYLOAD_TOOLS_URL: raw }))).variable).toBe('PAYLOAD_TOOLS_URL')
  })
})

describe('wallet keys', () => {
  it('reads an EVM key with or without 0x', async () => {
    expect((await loadConfig(env())).evmPrivateKey).toBe(TEST_EVM_KEY)
    expect(
      (await loadConfig(env({ PAYER_PRIVATE_KEY: TEST_EVM_KEY.slice(2).toUpperCase() })))
        .evmPrivateKey,
    ).toBe(TEST_EVM_KEY)
  })

  it('reads a Solana key in base58 or as a JSON byte array', async () => {
    const base58 = await loadConfig(
      env({ PAYER_PRIVATE_KEY: undefined, PAYER_SOLANA_SECRET_KEY: secretBase58 }),
    )
    expect(base58.solanaSecretKey).toEqual(secret)
    expect(base58.evmPrivateKey).toBeUndefined()
    const json = await loadConfig(env({ PAYER_SOLANA_SECRET_KEY: JSON.stringify([...secret]) }))
    expect(json.solanaSecretKey).toEqual(secret)
  })

  it('needs at least one key', async () => {
    expect((await refusal(env({ PAYER_PRIVATE_KEY: '' }))).message).toBe(
      'PAYER_PRIVATE_KEY: no wallet: set PAYER_PRIVATE_KEY (Base) or PAYER_SOLANA_SECRET_KEY ' +
        '(Solana), or both',
    )
  })

  it('never repeats a malformed key in its message', async () => {
    const evm = `${TEST_EVM_KEY}ff`
    const e1 = await refusal(env({ PAYER_PRIVATE_KEY: evm }))
    expect(e1.message).toBe(
      'PAYER_PRIVATE_KEY: must be 32 bytes of hex (64 hex digits, 0x optional)',
    )
    for (const bad of [
      secretBase58.slice(0, 40),
      `${secretBase58.slice(0, 80)}0OIl`,
      '[1,2,300]',
    ]) {
      const e2 = await refusal(env({ PAYER_SOLANA_SECRET_KEY: bad }))
      expect(e2.variable).toBe('PAYER_SOLANA_SECRET_KEY')
      expect(e2.message).not.toContain(bad.slice(0, 10))
    }
  })
})

describe('PAYER_RAIL and SOLANA_RPC_URL', () => {
  it('reads base (or evm) and solana, and needs the key of that rail', async () => {
    const both = { PAYER_SOLANA_SECRET_KEY: secretBase58 }
    expect((await loadConfig(env(both))).preferredRail).toBeUndefined()
    expect((await loadConfig(env({ ...both, PAYER_RAIL: 'Base' }))).preferredRail).toBe('base')
    expect((await loadConfig(env({ ...both, PAYER_RAIL: 'evm' }))).preferredRail).toBe('base')
    expect((await loadConfig(env({ ...both, PAYER_RAIL: 'solana' }))).preferredRail).toBe('solana')
    expect((await refusal(env({ PAYER_RAIL: 'solana' }))).message).toBe(
      'PAYER_RAIL: "solana" needs PAYER_SOLANA_SECRET_KEY',
    )
    expect((await refusal(env({ PAYER_RAIL: 'eth' }))).message).toBe(
      'PAYER_RAIL: must be "base" or "solana", got "eth"',
    )
  })

  it('defaults the Solana RPC to the public mainnet endpoint', async () => {
    expect((await loadConfig(env())).solanaRpcUrl).toBe('https://api.mainnet-beta.solana.com')
    expect((await loadConfig(env({ SOLANA_RPC_URL: 'http://127.0.0.1:8899' }))).solanaRpcUrl).toBe(
      'http://127.0.0.1:8899',
    )
  })
})

describe('caps', () => {
  it('default to 0.01 per call and 0.10 per session, with no day cap', async () => {
    expect((await loadConfig(env())).caps).toEqual({ perCall: 10_000n, perSession: 100_000n })
  })

  it('are parsed exactly into atomic units', async () => {
    const caps = (
      await loadConfig(
        env({ MAX_USDC_PER_CALL: '0.003', MAX_USDC_PER_SESSION: '0.002', MAX_USDC_PER_DAY: '1.5' }),
      )
    ).caps
    expect(caps).toEqual({ perCall: 3000n, perSession: 2000n, perDay: 1_500_000n })
  })

  it.each(['MAX_USDC_PER_CALL', 'MAX_USDC_PER_SESSION', 'MAX_USDC_PER_DAY'])(
    'refuses a malformed %s, naming it',
    async (name) => {
      for (const bad of ['-1', '0.0000001', '1e-2', 'ten']) {
        const error = await refusal(env({ [name]: bad }))
        expect(error.variable).toBe(name)
        expect(error.message).toContain(JSON.stringify(bad))
      }
    },
  )
})

describe('prepaid channels', () => {
  it('cap a deposit at 1 USDC by default, read Base from its public RPC; 0 turns them off', async () => {
    const config = await loadConfig(env())
    expect(config.depositCap).toBe(1_000_000n)
    expect(config.baseRpcUrl).toBe('https://mainnet.base.org')
    const custom = await loadConfig(
      env({ MAX_USDC_DEPOSIT: '0.25', BASE_RPC_URL: 'http://127.0.0.1:8545' }),
    )
    expect([custom.depositCap, custom.baseRpcUrl]).toEqual([250_000n, 'http://127.0.0.1:8545'])
    expect((await loadConfig(env({ MAX_USDC_DEPOSIT: '0' }))).depositCap).toBe(0n)
  })

  it('refuse a malformed MAX_USDC_DEPOSIT or BASE_RPC_URL, never quoting the URL', async () => {
    expect((await refusal(env({ MAX_USDC_DEPOSIT: '1.0000001' }))).variable).toBe(
      'MAX_USDC_DEPOSIT',
    )
    const secret = 'not a url/key-abc123'
    const error = await refusal(env({ BASE_RPC_URL: secret }))
    expect(error.message).toBe('BASE_RPC_URL: not a URL')
    expect((await refusal(env({ BASE_RPC_URL: 'wss://base.example/key' }))).message).toBe(
      'BASE_RPC_URL: must be an http:// or https:// URL, got wss:',
    )
  })
})

describe('stateDirFrom', () => {
  it('follows XDG on Unix, ~/.config otherwise, and APPDATA on Windows', () => {
    expect(stateDirFrom({}, 'linux', '/home/u')).toBe(
      join('/home/u', '.config', 'payload-tools-mcp'),
    )
    expect(stateDirFrom({ XDG_CONFIG_HOME: '/x' }, 'darwin', '/home/u')).toBe(
      join('/x', 'payload-tools-mcp'),
    )
    expect(stateDirFrom({ APPDATA: 'C:\\AppData' }, 'win32', 'C:\\u')).toBe(
      join('C:\\AppData', 'payload-tools-mcp'),
    )
  })
})
