import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { DEV_MNEMONIC, devAccount, startAnvil } from './anvil.js'
import { freePort } from './ports.js'

async function chainId(rpcUrl: string): Promise<string> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
  })
  return ((await res.json()) as { result: string }).result
}

async function refuses(rpcUrl: string): Promise<boolean> {
  return chainId(rpcUrl).then(
    () => false,
    () => true,
  )
}

describe('devAccount', () => {
  it('derives the well-known anvil accounts from the dev mnemonic', () => {
    expect(DEV_MNEMONIC).toBe('test test test test test test test test test test test junk')
    expect(devAccount(0)).toEqual({
      address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
    })
    expect(devAccount(9).address).toBe('0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')
  })
})

describe('startAnvil', () => {
  it('answers as chain 8453 on the requested port and refuses connections once stopped', async () => {
    const port = await freePort()
    const anvil = await startAnvil({ port })
    expect(anvil.rpcUrl).toBe(`http://127.0.0.1:${port}`)
    expect(anvil.chainId).toBe(8453)
    expect(await chainId(anvil.rpcUrl)).toBe('0x2105')
    await anvil.stop()
    expect(await refuses(anvil.rpcUrl)).toBe(true)
    await anvil.stop()
  })

  it('answers as another chain id when asked (84532 poses as Base Sepolia)', async () => {
    const anvil = await startAnvil({ chainId: 84532 })
    expect(anvil.chainId).toBe(84532)
    expect(await chainId(anvil.rpcUrl)).toBe('0x14a34')
    await anvil.stop()
  })

  it('fails with the reason when the port is taken', async () => {
    const first = await startAnvil()
    const port = Number(new URL(first.rpcUrl).port)
    await expect(startAnvil({ port })).rejects.toThrow(`anvil on port ${port} exited early`)
    await first.stop()
  })

  it('leaves no node behind when its parent process is killed', async () => {
    const anvilModule = fileURLToPath(new URL('./anvil.ts', import.meta.url))
    const parent = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { startAnvil } from ${JSON.stringify(anvilModule)}
         const anvil = await startAnvil()
         process.stdout.write(anvil.rpcUrl + '\\n')
         setInterval(() => {}, 1000)`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    const rpcUrl = await new Promise<string>((resolve, reject) => {
      parent.stdout.setEncoding('utf8').once('data', (line: string) => resolve(line.trim()))
      parent.once('exit', () => reject(new Error('parent exited before anvil started')))
    })
    expect(await chainId(rpcUrl)).toBe('0x2105')

    parent.kill('SIGKILL')
    const deadline = Date.now() + 30_000
    while (!(await refuses(rpcUrl)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await refuses(rpcUrl)).toBe(true)
  })
})
