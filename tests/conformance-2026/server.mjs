#!/usr/bin/env node
// The 2026-07-28 conformance server: an MCP server of the stateless revision, on the official
// TypeScript SDK v2 (@modelcontextprotocol/server, which serves that revision), with the tools,
// resources and prompts the suite's 2026-07-28 server scenarios ask for. Written for this project
// from what each scenario checks (see README.md beside this file).
//
//   node server.mjs --port PORT   Streamable HTTP at http://127.0.0.1:PORT/mcp (PORT 0: any free
//                                 port); the first line on stdout is the URL it serves
//   node server.mjs --stdio       the same server over stdio, for `tool-mediator proxy -- ...`
//
// One factory makes the server for either era (the SDK calls it per HTTP request, or once per
// stdio connection); what changes at run time (the tools and prompts the triggers add) lives here,
// outside any one instance. A Host or an Origin that is not loopback is refused. Logs: stderr.
import http from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { RED_PIXEL, TONE } from '../conformance/media.mjs';

import {
  McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ResourceTemplate,
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const NAME = 'tool-mediator-conformance-2026-server';
const VERSION = '1.0.0';
/** A POST body larger than this is refused (413), by the SDK's handler. */
const MAX_BODY = 4 * 1024 * 1024;
/** How long a client has to send a request (headers and body). */
const REQUEST_TIMEOUT_MS = 30_000;
/** The key requestState is signed with: made at start, so a tampered state is told apart. */
const STATE_KEY = `${process.pid}-${Date.now()}-${Math.random()}`;

function log(...parts) {
  process.stderr.write(`[conformance-2026-server] ${parts.join(' ')}\n`);
}


// ---- requestState: signed, so a client cannot forge or alter it -----------------------------

function mintState(value) {
  const body = Buffer.from(JSON.stringify(value)).toString('base64url');
  const mac = createHmac('sha256', STATE_KEY).update(body).digest('base64url');
  return `${body}.${mac}`;
}

/** The state's value, or undefined when it was not minted here (or was altered). */
function readState(state) {
  if (typeof state !== 'string') return undefined;
  const [body, mac] = state.split('.');
  if (!body || !mac) return undefined;
  const expected = createHmac('sha256', STATE_KEY).update(body).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString());
  } catch {
    return undefined;
  }
}

// ---- What changes while the server runs, shared by every instance ----------------------------

const changes = { tools: 0, prompts: 0 };
/** Publishes a list change to every open subscriptions/listen stream (set per transport). */
let publish = { tools: () => {}, prompts: () => {} };

// ---- The server, for either era ---------------------------------------------------------------

const text = (t) => ({ type: 'text', text: t });
const elicitName = (message) => ({
  method: 'elicitation/create',
  params: {
    message,
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
  }
});
const sampling = (question, maxTokens) => ({
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: question } }], maxTokens }
});
const listRoots = { method: 'roots/list', params: {} };
const inputRequired = (inputRequests, requestState) => ({
  resultType: 'input_required',
  ...(inputRequests ? { inputRequests } : {}),
  ...(requestState !== undefined ? { requestState } : {})
});

/** The text an elicitation, sampling or roots answer gives. */
function answerText(response) {
  if (!response || typeof response !== 'object') return String(response);
  if (response.content?.name !== undefined) return String(response.content.name);
  if (response.content?.text !== undefined) return String(response.content.text);
  if (Array.isArray(response.roots)) return response.roots.map((root) => root.uri).join(', ');
  return JSON.stringify(response);
}

function createServer() {
  const server = new McpServer(
    { name: NAME, version: VERSION },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: false },
        prompts: { listChanged: true },
        logging: {},
        completions: {}
      },
      instructions: 'A server for the MCP conformance suite (2026-07-28): every tool, resource and prompt it tests.'
    }
  );
  // Tools are listed by the SDK, and called here: a protocol error a tool throws (a missing
  // capability, a tampered state) must reach the client as a JSON-RPC error, which the SDK's own
  // tools/call would turn into a result with isError.
  const calls = new Map();
  const none = {};
  const tool = (name, description, handler, inputSchema = none) => {
    calls.set(name, handler);
    server.registerTool(name, { description, inputSchema }, handler);
  };

  tool('test_simple_text', 'Returns one text content item.', async () => ({
    content: [text('This is a simple text response for testing.')]
  }));
  tool('test_image_content', 'Returns an image content item: a PNG of one red pixel.', async () => ({
    content: [{ type: 'image', data: RED_PIXEL, mimeType: 'image/png' }]
  }));
  tool('test_audio_content', 'Returns an audio content item: a short WAV tone.', async () => ({
    content: [{ type: 'audio', data: TONE, mimeType: 'audio/wav' }]
  }));
  tool('test_embedded_resource', 'Returns an embedded text resource.', async () => ({
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
  }));
  tool('test_multiple_content_types', 'Returns text, an image and an embedded resource in one result.', async () => ({
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
  }));
  tool('test_error_handling', 'Always fails: returns a result with isError true.', async () => ({
    isError: true,
    content: [text('This tool intentionally returns an error for testing')]
  }));
  const progress = (ctx, progressToken, progress, total) =>
    ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total } });
  const withProgress = 'Reports progress 0, 50 and 100 of 100 when the call carries a progress token.';
  tool('test_tool_with_progress', withProgress, async (_args, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) {
      for (const step of [0, 50, 100]) {
        await progress(ctx, token, step, 100);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return { content: [text(String(token ?? 'no progress token'))] };
  });
  const logged = async (_args, ctx) => {
    for (const message of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
      await ctx.mcpReq.log('info', message);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { content: [text('Tool with logging executed successfully')] };
  };
  tool('test_tool_with_logging', 'Sends three info log messages while it runs, 50 ms apart.', logged);
  tool('test_logging_tool', 'Sends log messages, at the level the request asks for only.', logged);
  const needsSampling = 'Needs the client to declare sampling: refuses a client that does not.';
  tool('test_missing_capability', needsSampling, async (_args, ctx) => {
    if (!clientCapabilities(ctx).sampling) {
      const missing = { requiredCapabilities: { sampling: {} } };
      throw new MissingRequiredClientCapabilityError(missing, 'The client must declare sampling');
    }
    return { content: [text('the client declared sampling')] };
  });
  const streaming = 'Streams progress, then asks for a name in its result (never as a request).';
  tool('test_streaming_elicitation', streaming, async (_args, ctx) => {
    await progress(ctx, String(ctx.mcpReq.id), 1, 2);
    if (responses(ctx).user_name === undefined) {
      return inputRequired({ user_name: elicitName('What is your name?') });
    }
    return { content: [text(`Hello, ${answerText(responses(ctx).user_name)}!`)] };
  });
  const dynamicTool = (n) =>
    tool(`test_dynamic_tool_${n}`, `A tool added by test_trigger_tool_change (number ${n}).`, async () => ({
      content: [text(`dynamic tool ${n}`)]
    }));
  const dynamicPrompt = (n) =>
    server.registerPrompt(
      `test_dynamic_prompt_${n}`,
      { description: `A prompt added by test_trigger_prompt_change (number ${n}).` },
      async () => ({ messages: [{ role: 'user', content: text(`dynamic prompt ${n}`) }] })
    );
  // A trigger adds to this instance too: over stdio it is the one instance of the connection.
  tool('test_trigger_tool_change', 'Adds a tool, so the tool list changes.', async () => {
    changes.tools += 1;
    dynamicTool(changes.tools);
    publish.tools();
    return { content: [text(`tool list changed (${changes.tools})`)] };
  });
  tool('test_trigger_prompt_change', 'Adds a prompt, so the prompt list changes.', async () => {
    changes.prompts += 1;
    dynamicPrompt(changes.prompts);
    publish.prompts();
    return { content: [text(`prompt list changed (${changes.prompts})`)] };
  });
  for (let n = 1; n <= changes.tools; n++) dynamicTool(n);

  // Multi round-trip requests (SEP-2322): the input a tool needs rides in its result.
  const responses = (ctx) => ctx.mcpReq.inputResponses ?? {};
  tool('test_input_required_result_elicitation', 'Asks the user their name, then greets them.', async (_args, ctx) => {
    const answer = responses(ctx).user_name;
    if (answer === undefined) return inputRequired({ user_name: elicitName('What is your name?') });
    return { content: [text(`Hello, ${answerText(answer)}!`)] };
  });
  tool('test_input_required_result_sampling', 'Asks the model the capital of France.', async (_args, ctx) => {
    const answer = responses(ctx).capital_question;
    if (answer === undefined) {
      return inputRequired({ capital_question: sampling('What is the capital of France?', 100) });
    }
    return { content: [text(`The model said: ${answerText(answer)}`)] };
  });
  tool('test_input_required_result_list_roots', "Asks for the client's roots.", async (_args, ctx) => {
    const answer = responses(ctx).client_roots;
    if (answer === undefined) return inputRequired({ client_roots: listRoots });
    return { content: [text(`Roots: ${answerText(answer)}`)] };
  });
  const confirmation = 'Asks for a confirmation, keeping its state in requestState.';
  tool('test_input_required_result_request_state', confirmation, async (_args, ctx) => {
    const answer = responses(ctx).confirm;
    const state = readState(rawState(ctx));
    if (answer === undefined || state?.step !== 'confirm') {
      const confirm = {
        method: 'elicitation/create',
        params: {
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
        }
      };
      return inputRequired({ confirm }, mintState({ step: 'confirm' }));
    }
    return { content: [text('state-ok: confirmed')] };
  });
  const allAtOnce = 'Asks for a name, a greeting and the roots at once.';
  tool('test_input_required_result_multiple_inputs', allAtOnce, async (_args, ctx) => {
    const given = responses(ctx);
    const state = readState(rawState(ctx));
    const keys = ['user_name', 'greeting', 'client_roots'];
    if (state?.step !== 'all' || !keys.every((key) => given[key] !== undefined)) {
      return inputRequired(
        {
          user_name: elicitName('What is your name?'),
          greeting: sampling('Generate a greeting', 50),
          client_roots: listRoots
        },
        mintState({ step: 'all' })
      );
    }
    return { content: [text(`All inputs received: ${keys.map((key) => answerText(given[key])).join('; ')}`)] };
  });
  const twoRounds = 'Asks for a name, then a colour, over two rounds.';
  tool('test_input_required_result_multi_round', twoRounds, async (_args, ctx) => {
    const given = responses(ctx);
    const state = readState(rawState(ctx));
    if (state?.round === 1 && given.step1 !== undefined) {
      return inputRequired(
        {
          step2: {
            method: 'elicitation/create',
            params: {
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] }
            }
          }
        },
        mintState({ round: 2, name: answerText(given.step1) })
      );
    }
    if (state?.round === 2 && given.step2 !== undefined) {
      const color = given.step2?.content?.color ?? answerText(given.step2);
      return { content: [text(`Hello ${state.name}, your favorite color is ${color}. multi-round complete`)] };
    }
    return inputRequired({ step1: elicitName('Step 1: What is your name?') }, mintState({ round: 1 }));
  });
  tool('test_input_required_result_tampered_state', 'Refuses a requestState it did not mint.', async (_args, ctx) => {
    const raw = rawState(ctx);
    if (raw === undefined) {
      return inputRequired({ confirm: elicitName('Confirm to continue') }, mintState({ step: 'tamper' }));
    }
    if (readState(raw)?.step !== 'tamper') {
      throw new ProtocolError(-32602, 'Invalid requestState: not minted by this server (integrity check failed)');
    }
    return { content: [text('state-ok')] };
  });
  const declared = 'Asks only for what the client declared it can give.';
  tool('test_input_required_result_capabilities', declared, async (_args, ctx) => {
    const capabilities = clientCapabilities(ctx);
    const given = responses(ctx);
    if (Object.keys(given).length > 0) return { content: [text('inputs received')] };
    const wanted = {};
    if (capabilities.elicitation) wanted.user_name = elicitName('What is your name?');
    if (capabilities.sampling) wanted.greeting = sampling('Generate a greeting', 50);
    if (capabilities.roots) wanted.client_roots = listRoots;
    if (Object.keys(wanted).length === 0) return { content: [text('the client declared no input capability')] };
    return inputRequired(wanted);
  });

  // ---- Resources ----
  server.registerResource(
    'static-text',
    'test://static-text',
    { description: 'A text resource that never changes.', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]
    })
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A binary resource: a PNG of one red pixel.', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: RED_PIXEL }] })
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource clients may listen to.', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content.' }] })
  );
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'JSON data for any id.', mimeType: 'application/json' },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
        }
      ]
    })
  );

  // ---- Prompts ----
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments.' }, async () => ({
    messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }]
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments put into its text.',
      argsSchema: {
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument')
      }
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }]
    })
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt that embeds the resource it is given.',
      argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') }
    },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' }
          }
        },
        { role: 'user', content: text('Please process the embedded resource above.') }
      ]
    })
  );
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image.' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: RED_PIXEL, mimeType: 'image/png' } },
      { role: 'user', content: text('Please analyze the image above.') }
    ]
  }));
  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'A prompt that first asks the user what context it should use.' },
    async (ctx) => {
      const answer = (ctx?.mcpReq?.inputResponses ?? {}).user_context;
      if (answer === undefined) {
        return inputRequired({
          user_context: {
            method: 'elicitation/create',
            params: {
              message: 'What context should the prompt use?',
              requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] }
            }
          }
        });
      }
      const context = answer?.content?.context ?? answerText(answer);
      return { messages: [{ role: 'user', content: text(`Use this context: ${context}`) }] };
    }
  );
  for (let n = 1; n <= changes.prompts; n++) dynamicPrompt(n);

  server.server.setRequestHandler('tools/call', async (request, ctx) => {
    const handler = calls.get(request.params.name);
    if (!handler) throw new ProtocolError(-32602, `Tool ${request.params.name} not found`);
    return handler(request.params.arguments ?? {}, ctx);
  });

  // ---- Completion: for any prompt argument or template variable ----
  server.server.setRequestHandler('completion/complete', async (request) => {
    const value = request.params.argument?.value ?? '';
    const candidates = ['paris', 'park', 'party', 'test-one', 'test-two', 'hello', 'help', 'world'];
    const values = candidates.filter((candidate) => candidate.startsWith(value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

/** The capabilities the request's envelope declares. */
function clientCapabilities(ctx) {
  const key = 'io.modelcontextprotocol/clientCapabilities';
  return ctx.mcpReq.envelope?.[key] ?? ctx.mcpReq._meta?.[key] ?? {};
}

/** The requestState the retried request echoed, if any. */
function rawState(ctx) {
  const accessor = ctx.mcpReq.requestState;
  if (typeof accessor === 'string') return accessor;
  if (accessor && typeof accessor === 'object' && 'raw' in accessor) return accessor.raw;
  if (typeof accessor === 'function') {
    try {
      return accessor();
    } catch {
      return undefined;
    }
  }
  return ctx.mcpReq.params?.requestState;
}

// ---- Serving ----------------------------------------------------------------------------------

const args = process.argv.slice(2);
if (args[0] === '--stdio') {
  let pinned;
  serveStdio(() => (pinned = createServer()), { onerror: (error) => log('error:', error.message) });
  publish = {
    tools: () => pinned?.sendToolListChanged(),
    prompts: () => pinned?.sendPromptListChanged()
  };
  log('serving over stdio');
} else if (args[0] === '--port' && args[1] !== undefined) {
  const handler = createMcpHandler(() => createServer(), { onerror: (error) => log('error:', error.message) });
  publish = { tools: () => handler.notify.toolsChanged(), prompts: () => handler.notify.promptsChanged() };
  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = `http://${req.headers.host ?? '127.0.0.1'}${req.url}`;
      const chunks = [];
      let length = 0;
      for await (const chunk of req) {
        length += chunk.length;
        if (length > MAX_BODY) {
          res.writeHead(413).end();
          return;
        }
        chunks.push(chunk);
      }
      const body = ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks);
      const request = new Request(url, { method: req.method, headers: req.headers, body });
      const refused =
        hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
        originValidationResponse(request, localhostAllowedOrigins());
      const response =
        refused ??
        (new URL(url).pathname === '/mcp' ? await handler.fetch(request) : new Response('not found', { status: 404 }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (!response.body) return res.end();
      const reader = response.body.getReader();
      res.on('close', () => reader.cancel().catch(() => {}));
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        res.write(value);
      }
      res.end();
    } catch (error) {
      log('request failed:', error.message);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  httpServer.requestTimeout = REQUEST_TIMEOUT_MS;
  httpServer.headersTimeout = REQUEST_TIMEOUT_MS;
  httpServer.listen(Number(args[1]), '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${httpServer.address().port}/mcp\n`);
  });
  const stop = () => {
    handler.close().finally(() => httpServer.close(() => process.exit(0)));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  log('usage: node server.mjs --port PORT | --stdio');
  process.exit(2);
}
