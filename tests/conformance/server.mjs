#!/usr/bin/env node
// The conformance server: an MCP server with every tool, resource and prompt the server
// scenarios of the official conformance suite (@modelcontextprotocol/conformance) ask for,
// written for this project from what each scenario checks (see README.md beside this file).
//
//   node server.mjs --port PORT   Streamable HTTP at http://127.0.0.1:PORT/mcp (PORT 0: any free
//                                 port); the first line on stdout is the URL it serves
//   node server.mjs --stdio       the same server over stdio, for `tool-mediator proxy -- ...`
//
// Over HTTP each session (opened by `initialize`, named by Mcp-Session-Id, ended by DELETE) has a
// server of its own; events are kept per session so a client can resume a stream it lost
// (Last-Event-ID). A Host or an Origin that is not this machine's loopback is refused (403).
// Logs go to stderr only.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

import { RED_PIXEL, TONE } from './media.mjs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingLevelSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from '@modelcontextprotocol/sdk/types.js';

const NAME = 'tool-mediator-conformance-server';
const VERSION = '1.0.0';
/** The SSE `retry` the server suggests, in ms: short, so a resumed call does not wait long. */
const RETRY_MS = 200;
/** At most this many events are kept per session for resumption (the oldest go first). */
const MAX_EVENTS = 1000;
/** A POST body larger than this is refused (413). */
const MAX_BODY = 4 * 1024 * 1024;

function log(...parts) {
  process.stderr.write(`[conformance-server] ${parts.join(' ')}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));


// ---- What the server offers ------------------------------------------------------------------

const NO_ARGUMENTS = { type: 'object', properties: {} };

const TOOLS = [
  {
    name: 'test_simple_text',
    description: 'Returns one text content item.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_image_content',
    description: 'Returns an image content item: a PNG of one red pixel.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_audio_content',
    description: 'Returns an audio content item: a short WAV tone.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_embedded_resource',
    description: 'Returns an embedded text resource.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_multiple_content_types',
    description: 'Returns text, an image and an embedded resource in one result.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_tool_with_logging',
    description: 'Sends three info log messages while it runs, 50 ms apart.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_error_handling',
    description: 'Always fails: returns a result with isError true.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50 and 100 of 100 when the call carries a progress token.',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_sampling',
    description: 'Asks the client to sample a message for the prompt it is given.',
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'What to ask the language model' } },
      required: ['prompt']
    }
  },
  {
    name: 'test_elicitation',
    description: 'Asks the user, through the client, for a username and an email address.',
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'What to show the user' } },
      required: ['message']
    }
  },
  {
    name: 'test_elicitation_sep1034_defaults',
    description: 'Elicits a form whose fields of every primitive type have default values (SEP-1034).',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'test_elicitation_sep1330_enums',
    description: 'Elicits a form with the five kinds of enum field (SEP-1330).',
    inputSchema: NO_ARGUMENTS
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Takes a name and an address; its input schema uses JSON Schema 2020-12 keywords.',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
      },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false
    }
  },
  {
    name: 'test_reconnection',
    description:
      'Closes the SSE stream of its own call before it answers, so the client must resume it ' +
      '(Last-Event-ID); over stdio it simply answers.',
    inputSchema: NO_ARGUMENTS
  }
];

const RESOURCES = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    description: 'A text resource that never changes.',
    mimeType: 'text/plain'
  },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    description: 'A binary resource: a PNG of one red pixel.',
    mimeType: 'image/png'
  },
  {
    uri: 'test://watched-resource',
    name: 'watched-resource',
    description: 'A resource clients may subscribe to.',
    mimeType: 'text/plain'
  }
];

const TEMPLATE = {
  uriTemplate: 'test://template/{id}/data',
  name: 'template-data',
  description: 'JSON data for any id.',
  mimeType: 'application/json'
};
const TEMPLATE_PATTERN = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A prompt without arguments.' },
  {
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two arguments put into its text.',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true }
    ]
  },
  {
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds the resource it is given.',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }]
  },
  { name: 'test_prompt_with_image', description: 'A prompt with an image.' }
];

/** Completion candidates, by prompt and argument. */
const COMPLETIONS = {
  test_prompt_with_arguments: {
    arg1: ['paris', 'park', 'party', 'test-one', 'test-two'],
    arg2: ['hello', 'help', 'world']
  }
};

const LEVELS = LoggingLevelSchema.options; // debug … emergency, by severity

// ---- One server (one per HTTP session, one for stdio) ---------------------------------------

function createServer() {
  const server = new Server(
    { name: NAME, version: VERSION },
    {
      capabilities: {
        tools: { listChanged: false },
        resources: { subscribe: true, listChanged: false },
        prompts: { listChanged: false },
        logging: {},
        completions: {}
      },
      instructions: 'A server for the MCP conformance suite: every tool, resource and prompt it tests.'
    }
  );

  let logLevel = 'info';
  const subscriptions = new Set();

  async function logMessage(extra, level, data) {
    if (LEVELS.indexOf(level) < LEVELS.indexOf(logLevel)) return;
    await extra.sendNotification({
      method: 'notifications/message',
      params: { level, logger: NAME, data }
    });
  }

  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    logLevel = request.params.level;
    return {};
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));

  const text = (t) => ({ type: 'text', text: t });

  const calls = {
    test_simple_text: async () => ({
      content: [text('This is a simple text response for testing.')]
    }),
    test_image_content: async () => ({
      content: [{ type: 'image', data: RED_PIXEL, mimeType: 'image/png' }]
    }),
    test_audio_content: async () => ({
      content: [{ type: 'audio', data: TONE, mimeType: 'audio/wav' }]
    }),
    test_embedded_resource: async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.'
          }
        }
      ]
    }),
    test_multiple_content_types: async () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: RED_PIXEL, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 })
          }
        }
      ]
    }),
    test_tool_with_logging: async (_args, extra) => {
      await logMessage(extra, 'info', 'Tool execution started');
      await sleep(50);
      await logMessage(extra, 'info', 'Tool processing data');
      await sleep(50);
      await logMessage(extra, 'info', 'Tool execution completed');
      return { content: [text('Tool with logging executed successfully')] };
    },
    test_error_handling: async () => ({
      isError: true,
      content: [text('This tool intentionally returns an error for testing')]
    }),
    test_tool_with_progress: async (_args, extra) => {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress, total: 100, message: `${progress}% done` }
          });
        }
      }
      return { content: [text(`Progress test completed${token === undefined ? ' (no progress token)' : ''}`)] };
    },
    test_sampling: async (args, extra) => {
      if (!server.getClientCapabilities()?.sampling) {
        return { isError: true, content: [text('The client does not support sampling')] };
      }
      const answer = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: text(String(args.prompt ?? '')) }],
            maxTokens: 100
          }
        },
        CreateMessageResultSchema
      );
      const said = Array.isArray(answer.content)
        ? answer.content.map((c) => c.text ?? `[${c.type}]`).join(' ')
        : answer.content?.text ?? `[${answer.content?.type}]`;
      return { content: [text(`LLM response: ${said}`)] };
    },
    test_elicitation: async (args, extra) => {
      const answer = await elicit(extra, {
        message: String(args.message ?? ''),
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" }
          },
          required: ['username', 'email']
        }
      });
      if (answer.isError) return answer;
      return {
        content: [text(`User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)]
      };
    },
    test_elicitation_sep1034_defaults: async (_args, extra) => {
      const answer = await elicit(extra, {
        message: 'Please review your details (every field has a default)',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'User name', default: 'John Doe' },
            age: { type: 'integer', description: 'User age', default: 30 },
            score: { type: 'number', description: 'User score', default: 95.5 },
            status: {
              type: 'string',
              description: 'User status',
              enum: ['active', 'inactive', 'pending'],
              default: 'active'
            },
            verified: { type: 'boolean', description: 'Verification status', default: true }
          },
          required: []
        }
      });
      if (answer.isError) return answer;
      return {
        content: [text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)]
      };
    },
    test_elicitation_sep1330_enums: async (_args, extra) => {
      const answer = await elicit(extra, {
        message: 'Please choose (every kind of enum field)',
        requestedSchema: {
          type: 'object',
          properties: {
            untitledSingle: {
              type: 'string',
              description: 'One option, untitled',
              enum: ['option1', 'option2', 'option3']
            },
            titledSingle: {
              type: 'string',
              description: 'One option, titled',
              oneOf: [
                { const: 'value1', title: 'First Option' },
                { const: 'value2', title: 'Second Option' },
                { const: 'value3', title: 'Third Option' }
              ]
            },
            legacyEnum: {
              type: 'string',
              description: 'One option, titled the old way (enumNames)',
              enum: ['opt1', 'opt2', 'opt3'],
              enumNames: ['Option One', 'Option Two', 'Option Three']
            },
            untitledMulti: {
              type: 'array',
              description: 'Several options, untitled',
              items: { type: 'string', enum: ['option1', 'option2', 'option3'] }
            },
            titledMulti: {
              type: 'array',
              description: 'Several options, titled',
              items: {
                anyOf: [
                  { const: 'value1', title: 'First Choice' },
                  { const: 'value2', title: 'Second Choice' },
                  { const: 'value3', title: 'Third Choice' }
                ]
              }
            }
          },
          required: []
        }
      });
      if (answer.isError) return answer;
      return {
        content: [text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)]
      };
    },
    json_schema_2020_12_tool: async (args) => ({
      content: [text(`Received: ${JSON.stringify(args ?? {})}`)]
    }),
    test_reconnection: async (_args, extra) => {
      // Give the stream its first events, close it (the client resumes it with Last-Event-ID),
      // then answer: the answer is kept by the event store and replayed on the resumed stream.
      await sleep(50);
      const closed = typeof extra.closeSSEStream === 'function';
      if (closed) extra.closeSSEStream();
      await sleep(closed ? RETRY_MS + 100 : 0);
      return { content: [text(`Reconnection test completed${closed ? ' (after the stream was closed)' : ''}`)] };
    }
  };

  async function elicit(extra, params) {
    if (!server.getClientCapabilities()?.elicitation) {
      return { isError: true, content: [text('The client does not support elicitation')] };
    }
    return extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
  }

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const call = calls[request.params.name];
    if (!call) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    }
    return call(request.params.arguments ?? {}, extra);
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [TEMPLATE]
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    if (uri === 'test://static-text') {
      return {
        contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]
      };
    }
    if (uri === 'test://static-binary') {
      return { contents: [{ uri, mimeType: 'image/png', blob: RED_PIXEL }] };
    }
    if (uri === 'test://watched-resource') {
      return { contents: [{ uri, mimeType: 'text/plain', text: 'The watched resource, as it is now.' }] };
    }
    const match = TEMPLATE_PATTERN.exec(uri);
    if (match) {
      const id = decodeURIComponent(match[1]);
      return {
        contents: [
          {
            uri,
            mimeType: 'application/json',
            text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
          }
        ]
      };
    }
    throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const user = (content) => ({ role: 'user', content });
    switch (name) {
      case 'test_simple_prompt':
        return { messages: [user(text('This is a simple prompt for testing.'))] };
      case 'test_prompt_with_arguments':
        return {
          messages: [user(text(`Prompt with arguments: arg1='${args.arg1 ?? ''}', arg2='${args.arg2 ?? ''}'`))]
        };
      case 'test_prompt_with_embedded_resource':
        return {
          messages: [
            user({
              type: 'resource',
              resource: {
                uri: args.resourceUri ?? 'test://example-resource',
                mimeType: 'text/plain',
                text: 'Embedded resource content for testing.'
              }
            }),
            user(text('Please process the embedded resource above.'))
          ]
        };
      case 'test_prompt_with_image':
        return {
          messages: [
            user({ type: 'image', data: RED_PIXEL, mimeType: 'image/png' }),
            user(text('Please analyze the image above.'))
          ]
        };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
    }
  });

  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    const candidates = (ref.type === 'ref/prompt' && COMPLETIONS[ref.name]?.[argument.name]) || [];
    const values = candidates.filter((v) => v.startsWith(argument.value ?? ''));
    return { completion: { values, total: values.length, hasMore: false } };
  });

  return server;
}

// ---- Streamable HTTP -------------------------------------------------------------------------

/** Events of one session, kept so a client can resume a stream (Last-Event-ID). */
class EventStore {
  constructor() {
    this.events = new Map(); // eventId -> { streamId, message }, in the order stored
    this.next = 0;
  }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}.${++this.next}`;
    this.events.set(eventId, { streamId, message });
    while (this.events.size > MAX_EVENTS) this.events.delete(this.events.keys().next().value);
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.events.get(eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const last = this.events.get(lastEventId);
    if (!last) return '';
    let after = false;
    for (const [eventId, { streamId, message }] of this.events) {
      if (eventId === lastEventId) after = true;
      else if (after && streamId === last.streamId && Object.keys(message).length > 0) {
        await send(eventId, message);
      }
    }
    return last.streamId;
  }
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of a Host header (`name:port`, `[v6]:port`), lower-cased. */
function hostName(host) {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return null;
  }
}

function refuse(res, status, message) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let size = 0;
    req.on('data', (part) => {
      size += part.length;
      if (size > MAX_BODY) {
        reject(Object.assign(new Error('request body too large'), { status: 413 }));
        req.destroy();
      } else parts.push(part);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function isInitialize(body) {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => m && typeof m === 'object' && m.method === 'initialize');
}

async function serveHttp(port) {
  const sessions = new Map(); // Mcp-Session-Id -> transport

  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== '/mcp') return refuse(res, 404, 'Not found: MCP is served at /mcp');

      // DNS rebinding: only this machine's loopback names, in Host and in Origin.
      if (!LOOPBACK.has(hostName(req.headers.host ?? ''))) {
        return refuse(res, 403, `Forbidden: Host ${JSON.stringify(req.headers.host)} is not loopback`);
      }
      if (req.headers.origin !== undefined) {
        let origin = null;
        try {
          origin = new URL(req.headers.origin).hostname.toLowerCase();
        } catch {}
        if (!LOOPBACK.has(origin)) {
          return refuse(res, 403, `Forbidden: Origin ${JSON.stringify(req.headers.origin)} is not loopback`);
        }
      }

      const sessionId = req.headers['mcp-session-id'];
      if (req.method === 'POST') {
        const raw = await readBody(req);
        let body;
        try {
          body = JSON.parse(raw);
        } catch {
          res.writeHead(400, { 'Content-Type': 'application/json' });
          return res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
        }
        if (sessionId !== undefined) {
          const transport = sessions.get(sessionId);
          if (!transport) return refuse(res, 404, 'Session not found');
          return await transport.handleRequest(req, res, body);
        }
        if (!isInitialize(body)) return refuse(res, 400, 'Bad Request: no Mcp-Session-Id, and not an initialize');
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: new EventStore(),
          retryInterval: RETRY_MS,
          onsessioninitialized: (id) => {
            sessions.set(id, transport);
            log(`session ${id} opened (${sessions.size} open)`);
          },
          onsessionclosed: (id) => log(`session ${id} ended by the client`)
        });
        transport.onclose = () => {
          if (transport.sessionId && sessions.delete(transport.sessionId)) {
            log(`session ${transport.sessionId} closed (${sessions.size} open)`);
          }
        };
        await createServer().connect(transport);
        return await transport.handleRequest(req, res, body);
      }
      if (req.method === 'GET' || req.method === 'DELETE') {
        if (sessionId === undefined) return refuse(res, 400, 'Bad Request: Mcp-Session-Id is required');
        const transport = sessions.get(sessionId);
        if (!transport) return refuse(res, 404, 'Session not found');
        return await transport.handleRequest(req, res);
      }
      res.setHeader('Allow', 'GET, POST, DELETE');
      return refuse(res, 405, 'Method not allowed');
    } catch (error) {
      log(`error serving ${req.method} ${req.url}: ${error?.stack ?? error}`);
      if (!res.headersSent) refuse(res, error?.status ?? 500, String(error?.message ?? error));
      else res.end();
    }
  });

  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, '127.0.0.1', resolve);
  });
  const address = httpServer.address();
  process.stdout.write(`http://127.0.0.1:${address.port}/mcp\n`);
  log(`listening on http://127.0.0.1:${address.port}/mcp`);

  const stop = async () => {
    for (const transport of sessions.values()) await transport.close().catch(() => {});
    httpServer.close();
    httpServer.closeAllConnections?.();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// ---- stdio ------------------------------------------------------------------------------------

async function serveStdio() {
  const transport = new StdioServerTransport();
  transport.onclose = () => process.exit(0);
  process.stdin.on('end', () => process.exit(0));
  await createServer().connect(transport);
  log('serving over stdio');
}

// ---- Command line -----------------------------------------------------------------------------

function usage(problem) {
  if (problem) process.stderr.write(`server.mjs: ${problem}\n`);
  process.stderr.write('usage: node server.mjs --port PORT | --stdio\n');
  process.exit(2);
}

const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0] === '--stdio') {
  await serveStdio();
} else if (argv.length === 2 && argv[0] === '--port') {
  const port = Number(argv[1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`not a port: ${argv[1]}`);
  await serveHttp(port);
} else {
  usage(argv.length ? `unexpected arguments: ${argv.join(' ')}` : undefined);
}
