import type { ToolDefinition } from '../../tools/types.js'
import { MCP_PATH, MCP_PROTOCOL_VERSIONS, SERVICE } from '../service-info.js'

/**
 * Where the server card is served: `<streamable-http-url>/server-card`, the location the SEP-2127
 * draft reserves (modelcontextprotocol/experimental-ext-server-card, docs/discovery.md).
 */
export const SERVER_CARD_PATH = `${MCP_PATH}/server-card`
/** The draft's site-wide MCP Catalog, which points at the card. */
export const MCP_CATALOG_PATH = '/.well-known/mcp/catalog.json'
/** Media type of a server card (the draft's `Content-Type`, and a catalog entry's `mediaType`). */
export const SERVER_CARD_MEDIA_TYPE = 'application/mcp-server+json'
/** `$schema` of a server card: the draft's v1 URL. */
export const SERVER_CARD_SCHEMA =
  'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json'
/** `_meta` key saying the card is experimental, and after which draft. */
export const EXPERIMENTAL_META_KEY = 'payload-tools/experimental'
/** `_meta` key of the MCP tool names, in `tools/list` order (the card lists no primitives). */
export const TOOLS_META_KEY = 'payload-tools/tools'

/** An MCP Server Card as the SEP-2127 draft shapes it (the fields this service fills). */
export interface ServerCard {
  $schema: typeof SERVER_CARD_SCHEMA
  /** Reverse-DNS of the public host, a slash, `payload-tools`, e.g. `example.tools/payload-tools`. */
  name: string
  /** The interface version (SERVICE.version). */
  version: string
  /** At most 100 characters (the draft's bound). */
  description: string
  title: string
  /** The landing page. */
  websiteUrl: string
  remotes: [
    {
      type: 'streamable-http'
      /** `<public base URL>/mcp`. */
      url: string
      /** The protocol versions `/mcp` negotiates, newest first. */
      supportedProtocolVersions: string[]
    },
  ]
  _meta: { [EXPERIMENTAL_META_KEY]: string; [TOOLS_META_KEY]: string[] }
}

/**
 * Builds the server card of `/mcp`, EXPERIMENTAL: SEP-2127 is a draft and the card's shape may
 * change (`_meta["payload-tools/experimental"]` says so). Identity and transport only, as the
 * draft wants; the tools are listed by `tools/list`, and here by name alone under `_meta`.
 *
 * @example
 * buildServerCard({ tools: catalog, publicBaseUrl: 'https://tools.example' })
 * // { $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
 * //   name: 'example.tools/payload-tools', version: '0.3.0', …,
 * //   remotes: [{ type: 'streamable-http', url: 'https://tools.example/mcp', … }], _meta: { … } }
 */
export function buildServerCard(options: {
  tools: readonly ToolDefinition[]
  /** Base URL without trailing slash. */
  publicBaseUrl: string
}): ServerCard {
  const base = options.publicBaseUrl
  return {
    $schema: SERVER_CARD_SCHEMA,
    // The draft's name pattern allows letters, digits, dots and hyphens before the slash.
    name: `${new URL(base).hostname
      .split('.')
      .reverse()
      .join('.')
      .replace(/[^a-zA-Z0-9.-]/g, '-')}/payload-tools`,
    version: SERVICE.version,
    description: `${options.tools.length} deterministic payload tools for agents, each call paid in USDC with x402.`,
    title: SERVICE.name,
    websiteUrl: `${base}/`,
    remotes: [
      {
        type: 'streamable-http',
        url: `${base}${MCP_PATH}`,
        supportedProtocolVersions: [...MCP_PROTOCOL_VERSIONS],
      },
    ],
    _meta: {
      [EXPERIMENTAL_META_KEY]:
        'SEP-2127 draft (modelcontextprotocol/experimental-ext-server-card): this card may change shape or place',
      [TOOLS_META_KEY]: options.tools.map((tool) => tool.mcpName),
    },
  }
}

/**
 * Builds the MCP Catalog of the SEP-2127 draft (`/.well-known/mcp/catalog.json`, EXPERIMENTAL):
 * one entry, pointing at the server card.
 *
 * @example
 * buildMcpCatalog(card, 'https://tools.example').entries[0].url // 'https://tools.example/mcp/server-card'
 */
export function buildMcpCatalog(card: ServerCard, publicBaseUrl: string) {
  return {
    specVersion: 'draft',
    entries: [
      {
        identifier: `urn:mcp:server:${card.name}`,
        displayName: card.title,
        mediaType: SERVER_CARD_MEDIA_TYPE,
        url: `${publicBaseUrl}${SERVER_CARD_PATH}`,
      },
    ],
  }
}
