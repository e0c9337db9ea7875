import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    name: 'mcp-bridge',
    // Vitest's default include: every *.test.ts under src/. The repository's root config splits
    // them into its `unit` and `e2e` buckets by name (*.e2e.test.ts: loopback servers).
    testTimeout: 20_000,
    // The unit tests hold no global state, so they share one module cache: each file would
    // otherwise load the x402 SDK, viem and the MCP SDK again.
    isolate: false,
  },
})
