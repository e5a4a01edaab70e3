#!/usr/bin/env node
// The "browser" of the client scenarios: tool-mediator opens the authorization URL with
// $BROWSER, and this follows it as a browser would, redirects included, so the suite's
// authorization server (which approves at once) sends the code to tool-mediator's loopback
// redirect URI. Never prints anything (tool-mediator's stdout is the MCP stream).
const url = process.argv[2];
try {
  const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(20_000) });
  await response.arrayBuffer();
} catch {
  process.exitCode = 1;
}
