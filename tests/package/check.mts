// tests/package/run copies this beside the README's Node example (page-server.mts) in a project
// outside the checkout that installed the packed @tool-mediator/node, compiles both with tsc, and
// runs this: the MCP TypeScript SDK's client starts the example in this very Node (as written,
// `node page-server.mts`, or the file given as the first argument: `dist/page-server.mjs`, what
// tsc wrote for Node.js 20), lists its tools and calls one. It prints one JSON line; the script
// compares it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'

const client = new Client({ name: 'tool-mediator-package-check', version: '1.0.0' })
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [process.argv[2] ?? 'page-server.mts'],
    cwd: process.cwd(),
    stderr: 'inherit',
  }),
)
const { tools } = await client.listTools()
const called = await client.callTool({ name: 'get_user', arguments: { userId: 7 } })
// The source's own name is not one the client was given: an error, as for any unknown tool.
// (The SDK writes `MCP error CODE: ` before an McpError's message on each side: left out here.)
let unknown: unknown = 'answered'
try {
  await client.callTool({ name: 'gt_usr', arguments: { uid: 7 } })
} catch (error) {
  unknown =
    error instanceof McpError
      ? { code: error.code, message: error.message.replace(/^(MCP error -?\d+: )+/, '') }
      : String(error)
}
await client.close()

console.log(
  JSON.stringify({
    tools: tools.map((tool) => tool.name),
    get_user: tools.find((tool) => tool.name === 'get_user')?.description ?? null,
    call: called.content,
    unknown,
  }),
)
