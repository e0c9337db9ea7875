// Lets @modelcontextprotocol/conformance 0.1.16 run on Node 20: its bundle imports fs.globSync
// (Node 22) at the top, for its tier-check command alone, so the whole CLI fails to load.
// Registered only when fs lacks globSync: `node --import ./node20.mjs …/conformance/dist/index.js`.
import fs from 'node:fs'
import { register } from 'node:module'

if (typeof fs.globSync !== 'function') register('./node20-hooks.mjs', import.meta.url)
