import { readFileSync } from 'node:fs'

/** The package version, read from the package.json beside `dist/` (or `src/` in tests). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
).version
