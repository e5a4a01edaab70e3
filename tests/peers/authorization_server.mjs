// A real OAuth 2.0 authorization server on 127.0.0.1 for the gateway's sign-in tests:
// oidc-provider (installed by tests/peers/install into .tools/authorization-server), issuing JWT
// access tokens by the client credentials grant for whatever resource a client asks for
// (RFC 8707), signed ES256 with a key made fresh at each start.
//
//   node authorization_server.mjs CLIENTS
//
// CLIENTS is a JSON list of {"client_id", "client_secret", "view"?, "ttl"?}: a client's tokens
// carry its `view` as a claim of that name, and live `ttl` seconds (600 by default). Listens on
// a free port of 127.0.0.1 and prints {"issuer": URL} on a line once it serves.

import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '../../.tools/authorization-server/node_modules');
const resolved = createRequire(path.join(modules, 'index.js')).resolve('oidc-provider');
const { default: Provider } = await import(pathToFileURL(resolved).href);

const clients = JSON.parse(process.argv[2] ?? '[]');
const byId = new Map(clients.map((client) => [client.client_id, client]));
const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: clients.map(({ client_id, client_secret }) => ({
      client_id,
      client_secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: 'ES256',
    })),
    jwks: { keys: [{ ...key, kid: 'test-key', alg: 'ES256', use: 'sig' }] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx, resource, client) => ({
          scope: 'mcp',
          audience: resource,
          accessTokenTTL: byId.get(client.clientId)?.ttl ?? 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const view = byId.get(token.clientId)?.view;
      return view ? { view } : undefined;
    },
  });
  server.on('request', provider.callback());
  console.log(JSON.stringify({ issuer }));
});
