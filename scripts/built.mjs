// `npm start` runs the build in dist/ and never compiles: this check, its `prestart`, says what
// to do when there is none, and warns when src/ changed after it was built.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const MAIN = 'dist/main.js'

if (!existsSync(MAIN)) {
  process.stderr.write(`npm start: ${MAIN} is missing; build it once with \`npm run build\`\n`)
  process.exit(1)
}
const built = statSync(MAIN).mtimeMs
/** Whether a TypeScript source under `dir` was written after the build. */
const newer = (dir) =>
  readdirSync(dir, { withFileTypes: true, recursive: true }).some(
    (entry) =>
      entry.isFile() &&
      entry.name.endsWith('.ts') &&
      statSync(join(entry.parentPath, entry.name)).mtimeMs > built,
  )
if (existsSync('src') && newer('src')) {
  process.stderr.write(
    'npm start: src/ changed after dist/ was built; starting the build as it is (`npm run build` to rebuild)\n',
  )
}
