// The seed's page: cryptic WebMCP tools registered with @mcp-b/global, bridged to
// webmcp-local-relay by the relay's embed script. Every `execute` records the name it was
// called by and the arguments it received, and returns them, so a test can see what reached
// the page after the mediator mapped a call back.
(function () {
  'use strict';

  const query = new URLSearchParams(window.location.search);
  const relayPort = query.get('relayPort') || '9333';
  const relayId = query.get('relayId') || '';
  const calls = [];

  function record(tool) {
    return async (args) => {
      const call = { tool, arguments: args };
      calls.push(call);
      document.getElementById('calls').textContent = JSON.stringify(calls, null, 2);
      return {
        content: [{ type: 'text', text: JSON.stringify(call) }],
        structuredContent: call,
      };
    };
  }

  // The seed's tools, as the seed wrote them: cryptic names, one-word descriptions, and
  // cryptic argument names (uid, eml, nm).
  const seedTools = [
    {
      name: 'gt_usr',
      description: 'gets user',
      inputSchema: { type: 'object', properties: { uid: { type: 'number' }, eml: { type: 'string' } } },
    },
    {
      name: 'del',
      description: 'delete',
      inputSchema: { type: 'object', properties: { uid: { type: 'number' } }, required: ['uid'] },
    },
    {
      name: 'upd_prf',
      description: 'update profile',
      inputSchema: {
        type: 'object',
        properties: { uid: { type: 'number' }, nm: { type: 'string' }, bio: { type: 'string' } },
        required: ['uid'],
      },
    },
  ];

  // Registered later, on request (the driver's /register): no override covers it, the rules do.
  const extraTool = {
    name: 'srch_imgs',
    description: 'search images by keyword',
    inputSchema: { type: 'object', properties: { q: { type: 'string' }, n: { type: 'number' } } },
  };

  const modelContext = document.modelContext || navigator.modelContext;

  function register(tool) {
    return modelContext.registerTool({ ...tool, execute: record(tool.name) });
  }

  // @mcp-b/global 5.1.0 follows the current WebMCP draft: its navigator.modelContext has no
  // callTool, and its testing shim (navigator.modelContextTesting) announces changes with a
  // `toolchange` event. The relay's embed script (2.2.0) looks for callTool, else for the older
  // testing API, registerToolsChangedCallback, to hear of tools registered after load; without
  // it, it gives up after 5 s and a tool registered later never reaches the relay. This adapter
  // gives the embed script the callback it looks for, fed by the event the polyfill fires.
  const testing = navigator.modelContextTesting;
  if (testing && typeof testing.registerToolsChangedCallback !== 'function') {
    testing.registerToolsChangedCallback = (callback) => testing.addEventListener('toolchange', () => callback());
  }

  function loadEmbed() {
    const script = document.createElement('script');
    script.src = '/dist/relay/embed.js';
    script.setAttribute('data-relay-port', relayPort);
    if (relayId) script.setAttribute('data-relay-id', relayId);
    document.body.appendChild(script);
  }

  const ready = Promise.all(seedTools.map(register)).then(() => {
    loadEmbed();
    return true;
  });

  window.seedPage = {
    ready,
    calls: () => calls.slice(),
    registerExtra: () => register(extraTool),
    tools: () => (navigator.modelContextTesting ? navigator.modelContextTesting.listTools().map((t) => t.name) : []),
  };
})();
