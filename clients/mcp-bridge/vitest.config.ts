import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    name: 'mcp-bridge',
    include: ['src/**/*.test.ts'],
    testTimeout: 20_000,
    // The unit tests hold no global state, so they share one module cache: each file would
    // otherwise load the x402 SDK, viem and the MCP SDK again.
    isolate: false,
  },
})
