// Module hook (node:module register) for node20.mjs: in the conformance bundle only, drops the
// globSync import and defines it as a function that says why it is missing (tier-check only).
const BUNDLE = '/node_modules/@modelcontextprotocol/conformance/dist/'

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context)
  if (!url.includes(BUNDLE) || loaded.source == null) return loaded
  const source = String(loaded.source)
  const match = /globSync as ([\w$]+),/.exec(source)
  if (!match) return loaded
  const name = match[1]
  return {
    ...loaded,
    source: `${source.replace(match[0], '')}\nfunction ${name}(){throw new Error('fs.globSync needs Node 22')}\n`,
  }
}
