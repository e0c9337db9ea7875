import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'service', include: ['src/**/*.test.ts', 'test/**/*.test.ts'] },
      },
      // The bridge package's own config (its unit tests).
      'clients/mcp-bridge',
    ],
  },
})
