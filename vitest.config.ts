import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// Three projects by cost, told apart by the file's name (docs/development.md, "Tests"; test/layout.test.ts
// checks that every file is where its imports say it belongs):
//   unit    `*.test.ts`: no child process, no socket (test/setup/unit.ts refuses both);
//   e2e     `*.e2e.test.ts`: the devnet (anvil, litesvm, the facilitator), the service on
//           loopback, the machine's PostgreSQL and Redis, short-lived child processes;
//   system  `*.system.test.ts`: podman, nginx, Chromium, compose, PostgreSQL and Redis servers
//           the test starts itself.
// `npm run test:unit` (unit and the bridge's own project), `test:e2e`, `test:system`.

const E2E = '**/*.e2e.test.ts'
const SYSTEM = '**/*.system.test.ts'

export default defineConfig({
  test: {
    // Bounds on a hang, never performance targets (those are `npm run bench`).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // At least two files at a time: end-to-end files spend much of their time waiting on chains,
    // child processes and sockets (vitest's default on 2 cores would be one).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [E2E, SYSTEM],
          setupFiles: ['test/setup/unit.ts'],
          // One module cache per worker: each file would otherwise load Zod, the x402 SDK, viem
          // and the MCP SDK again (two thirds of the project's time). No unit test mocks a module
          // or changes globals it does not restore.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: [`src/${E2E}`, `test/${E2E}`],
          // One module cache per worker, so that its files share one dev stack
          // (test/helpers/service.ts, sharedDevStack) and load the SDKs once.
          isolate: false,
        },
      },
      {
        extends: true,
        test: { name: 'system', include: [`src/${SYSTEM}`, `test/${SYSTEM}`] },
      },
      // The bridge package's own config, split the same way: its files on loopback are e2e.
      {
        extends: './clients/mcp-bridge/vitest.config.ts',
        root: './clients/mcp-bridge',
        test: {
          name: 'unit-mcp-bridge',
          exclude: [E2E, SYSTEM],
          setupFiles: ['../../test/setup/unit.ts'],
        },
      },
      {
        extends: './clients/mcp-bridge/vitest.config.ts',
        root: './clients/mcp-bridge',
        test: { name: 'e2e-mcp-bridge', include: [`src/${E2E}`] },
      },
    ],
  },
})
