// A small MCP server written with the official TypeScript SDK, holding the seed's raw tools and
// linking @tool-mediator/node as its middleware. Its handler answers with what it received, so
// a test sees the name and arguments that reached the source.
//
//   node seed-server.mjs OVERRIDES_DIR [session [DISCLOSURE] | middleware]
//
// `session` (the default) routes every call through a mediator Session (category tools of at
// least DISCLOSURE tools, list_changed); `middleware` is the seed's `tools => tools` hook alone,
// calls mapped back by the provenance each enhanced tool carries.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult as SdkCallToolResult } from '@modelcontextprotocol/sdk/types.js'

import { Mediator, type EnhancedTool } from '@tool-mediator/node'
import { seedTools } from './seed-tools.mjs'

const [overrides, mode = 'session', disclosure] = process.argv.slice(2)
if (overrides === undefined || (mode !== 'session' && mode !== 'middleware')) {
  console.error('usage: seed-server.mjs OVERRIDES_DIR [session [DISCLOSURE] | middleware]')
  process.exit(2)
}

/** The source's own handler: knows only the raw names. */
function handle(name: string, args: Record<string, unknown>): SdkCallToolResult {
  if (!seedTools.some((tool) => tool.name === name)) {
    throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`)
  }
  const received = { name, arguments: args }
  return { content: [{ type: 'text', text: JSON.stringify(received) }], structuredContent: { received } }
}

const mediator = await Mediator.create({ overrides: [overrides], source: 'example.com', sourceType: 'web' })
const server = new Server({ name: 'seed-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })

if (mode === 'session') {
  const session = mediator.session(
    undefined,
    disclosure === undefined ? { disclosure: false } : { disclosure: Number(disclosure), disclosureMode: 'categories', wholeBelow: 0 },
  )
  session.onListChanged(() => void server.sendToolListChanged())
  server.setRequestHandler(ListToolsRequestSchema, (request) => session.listTools(seedTools, request.params?.cursor))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const route = await session.routeCall(request.params.name, request.params.arguments)
    switch (route.route) {
      case 'local':
        return route.result
      case 'upstream':
        return handle(route.name, route.arguments)
      case 'notFound':
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)
    }
  })
} else {
  const middleware = mediator.toolMiddleware()
  let listed: EnhancedTool[] = []
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    listed = await middleware(seedTools)
    return { tools: listed }
  })
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = listed.find((candidate) => candidate.name === request.params.name)
    const provenance = tool?._meta?.['tool-mediator/provenance']
    const aliases = provenance?.argumentAliases ?? {}
    const args = Object.fromEntries(
      Object.entries(request.params.arguments ?? {}).map(([name, value]) => [aliases[name] ?? name, value]),
    )
    return handle(provenance?.originalName ?? request.params.name, args)
  })
}

await server.connect(new StdioServerTransport())
