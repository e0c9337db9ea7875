import { base64Tool } from './base64.js'
import { hashTool } from './hash.js'
import { hmacTool } from './hmac.js'
import { jsonValidateTool } from './json-validate/index.js'
import { jwtInspectTool } from './jwt-inspect.js'
import { payloadInspectTool } from './payload-inspect/index.js'
import { pipelineTool } from './pipeline/index.js'
import { textDiffTool } from './text-diff/index.js'
import type { ToolDefinition } from './types.js'

/**
 * Every paid tool, in SPEC 4.1 order. HTTP routes, MCP tools, OpenAPI, llms.txt, capabilities,
 * bazaar and the landing page all loop over this list; a new tool is one module plus one line.
 *
 * @example catalog.map((tool) => tool.path) // ['/hash', '/base64', ..., '/payload-inspect']
 */
export const catalog: readonly ToolDefinition[] = [
  hashTool,
  base64Tool,
  hmacTool,
  jsonValidateTool,
  jwtInspectTool,
  textDiffTool,
  pipelineTool,
  payloadInspectTool,
]

/**
 * The tool served at an HTTP path, e.g. "/hash".
 *
 * @example findToolByPath('/json-validate')?.operationId // 'json_validate'
 */
export function findToolByPath(path: string): ToolDefinition | undefined {
  return catalog.find((tool) => tool.path === path)
}

/**
 * The tool with an MCP name, e.g. "payload_hash".
 *
 * @example findToolByMcpName('payload_inspect')?.id // 'payload-inspect'
 */
export function findToolByMcpName(name: string): ToolDefinition | undefined {
  return catalog.find((tool) => tool.mcpName === name)
}
