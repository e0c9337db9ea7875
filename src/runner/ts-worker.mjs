// The tool worker when the service runs from its TypeScript sources (vitest, `npm run dev`):
// worker threads of Node 20 do not inherit the parent's module hooks, and a `--import tsx` in
// their execArgv is not applied either, so this plain-JS entry registers tsx in the thread and
// loads worker.ts through it. `npm start` runs dist/runner/worker.js directly, without tsx.
import { workerData } from 'node:worker_threads'
import { register } from 'tsx/esm/api'

register()
const worker = await import(workerData.worker)

export default worker.default
