// An MCP server for a page's tools, with the mediator linked in as its middleware.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { Mediator, type Tool } from '@tool-mediator/node'

// The tools as the page registers them: cryptic names, cryptic parameters.
const tools: Tool[] = [
  { name: 'gt_usr', description: 'gets user', inputSchema: { type: 'object', properties: { uid: { type: 'number' } } } },
  { name: 'del', description: 'delete', inputSchema: { type: 'object', properties: { uid: { type: 'number' } } } },
  { name: 'upd_prf', description: 'update profile', inputSchema: { type: 'object', properties: { uid: {}, nm: {} } } },
]
function run(name: string, args: Record<string, unknown>) {
  return { content: [{ type: 'text' as const, text: `${name} ran with ${JSON.stringify(args)}` }] }
}

const mediator = await Mediator.create({ source: 'example.com', sourceType: 'web' }) // the curated example.com overrides are built in
const session = mediator.session()
const server = new Server({ name: 'example.com', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
session.onListChanged(() => server.sendToolListChanged())

server.setRequestHandler(ListToolsRequestSchema, (request) => session.listTools(tools, request.params?.cursor))
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const route = await session.routeCall(request.params.name, request.params.arguments)
  if (route.route === 'local') return route.result // a category tool, answered by the session
  if (route.route === 'notFound') throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)
  return run(route.name, route.arguments) // gt_usr with {uid}, whatever the model called
})
await server.connect(new StdioServerTransport())
