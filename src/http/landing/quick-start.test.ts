import { describe, expect, it } from 'vitest'
import { catalog } from '../../tools/catalog.js'
import { quickStartSteps } from './quick-start.js'

const BASE = 'http://127.0.0.1:8402'
const fetchText = (rails: Parameters<typeof quickStartSteps>[2]) =>
  quickStartSteps(BASE, catalog, rails).find((step) => step.id === 'fetch')?.text ?? ''

describe('quick start', () => {
  it('names Solana only where the service offers it', () => {
    const evm = { id: 'evm', network: 'eip155:8453' } as const
    const solana = { id: 'solana', network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' } as const
    expect(fetchText([evm, solana])).toContain('Use `@x402/svm` to pay on Solana instead.')
    // A Base-only service (npm run dev where litesvm cannot load): no Solana hint.
    expect(fetchText([evm])).not.toMatch(/solana|svm/i)
  })
})
