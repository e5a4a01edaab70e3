#!/usr/bin/env node
// The MCP client `conformance client` runs for its client scenarios, with tool-mediator in
// the middle: an SDK client over stdio to `tool-mediator proxy --url SERVER` (proxy), or to
// `tool-mediator gateway` with SERVER in its servers file (gateway). tool-mediator is the client
// the scenarios test: it discovers, registers, signs in (its "browser" is browser.mjs beside
// this file) and sends the tokens. This lists the tools and calls the scenario's tool.
//
//   node client.mjs proxy|gateway PATH_TO_TOOL_MEDIATOR SERVER_URL   (the suite appends the URL)
//
// The scenario's context (a pre-registered client id and secret, client credentials) comes in
// MCP_CONFORMANCE_CONTEXT and is given to tool-mediator as a user would: flags, or the servers
// file's "oauth" object, the secret in an environment variable. Sign-ins are kept in a fresh
// data directory for each run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [how, mediator, server] = process.argv.slice(2);
if (!['proxy', 'gateway'].includes(how) || !mediator || !server) {
  console.error('usage: client.mjs proxy|gateway PATH_TO_TOOL_MEDIATOR SERVER_URL');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
const home = mkdtempSync(join(tmpdir(), 'tool-mediator-client-'));

// Configured once by a user who has a client ID metadata document; used where the server takes it.
const oauth = { client_metadata_url: 'https://conformance-test.local/client-metadata.json' };
const env = {
  ...process.env,
  HOME: home,
  XDG_DATA_HOME: join(home, 'data'),
  XDG_CONFIG_HOME: join(home, 'config'),
  XDG_CACHE_HOME: join(home, 'cache'),
  BROWSER: join(here, 'browser.mjs'),
  // Sign-ins stay in this run's folder: never in the platform credential store of whoever runs it.
  TOOL_MEDIATOR_CREDENTIAL_STORE: 'file',
};
if (context.client_id) oauth.client_id = context.client_id;
if (context.client_secret) {
  env.CONFORMANCE_CLIENT_SECRET = context.client_secret;
  oauth.client_secret_env = 'CONFORMANCE_CLIENT_SECRET';
}
if (scenario.startsWith('auth/client-credentials')) oauth.grant = 'client_credentials';

let args;
if (how === 'proxy') {
  const flags = {
    client_id: '--oauth-client-id',
    client_secret_env: '--oauth-client-secret-env',
    client_metadata_url: '--oauth-client-metadata-url',
  };
  args = ['proxy', '--url', server];
  for (const [key, flag] of Object.entries(flags)) if (oauth[key]) args.push(flag, oauth[key]);
  if (oauth.grant === 'client_credentials') args.push('--oauth-client-credentials');
} else {
  const servers = join(home, 'servers.json');
  writeFileSync(servers, JSON.stringify({ mcpServers: { remote: { url: server, oauth } } }));
  args = ['gateway', '--config', servers];
}

const transport = new StdioClientTransport({ command: mediator, args, env, cwd: home, stderr: 'inherit' });
const client = new Client({ name: 'conformance-through-tool-mediator', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  if (scenario === 'tools_call') {
    await client.callTool({ name: tools.find((tool) => tool.name.includes('add'))?.name ?? 'add_numbers', arguments: { a: 2, b: 3 } });
  } else if (tools.length > 0 && !scenario.startsWith('auth/pre-registration') && !scenario.startsWith('auth/client-credentials')) {
    const result = await client.callTool({ name: tools[0].name, arguments: {} });
    if (result.isError) throw new Error(`the tool call failed: ${JSON.stringify(result.content)}`);
  }
} catch (error) {
  console.error(`client.mjs: ${error?.message ?? error}`);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
  rmSync(home, { recursive: true, force: true });
}
