// The browser side of the browser story: serves the seed's page (tests/browser/page.html and
// page.js) and the npm packages' dist files on 127.0.0.1, runs Debian's headless Chromium
// through playwright-core, and takes orders on a small control API, also on 127.0.0.1.
//
//   node tests/browser/driver.mjs [--npm .tools/npm] [--chromium /usr/bin/chromium]
//                                 [--profile DIR] [--page-port 0] [--control-port 0]
//                                 [--lifetime 900] [--quiet]
//
// It prints one JSON line on stdout when it is ready:
//   {"control": "http://127.0.0.1:C", "origin": "http://127.0.0.1:S", "page": ".../page.html"}
// and then serves until its standard input closes (when it is a pipe, as a test gives it: a
// test that dies takes the driver along), it gets SIGTERM or SIGINT, it is asked to
// (POST /shutdown), or --lifetime seconds have passed; each time it closes Chromium first.
// Chromium gets a fresh profile: --profile DIR (which must not exist yet, so a test can find
// and end a Chromium left behind by its --user-data-dir), else a new temporary directory,
// removed at the end.
//
// The control API (JSON in, JSON out):
//   POST /open      {"relayPort": 9333, "relayId": "demo"}  opens the page in a new tab and
//                   waits until its tools are registered and the embed script is loading
//                   -> {"tab": 1, "url": "..."}
//   POST /register  {"tab": 1}   the page registers one more tool (srch_imgs)
//   GET  /calls?tab=1            what the page's tools were called with, in order
//   GET  /tools?tab=1            the names the page's WebMCP runtime holds
//   GET  /console?tab=1          the tab's console messages and page errors
//   POST /screenshot {"tab": 1, "path": "/tmp/page.png"}   a PNG of the tab
//   POST /close     {"tab": 1}   closes the tab
//   POST /shutdown               closes Chromium and exits
import { createServer } from 'node:http';
import { fstatSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const options = {
  npm: resolve(here, '../../.tools/npm'),
  chromium: '/usr/bin/chromium',
  lifetime: 900,
  profile: null,
  pagePort: 0,
  controlPort: 0,
  quiet: false,
};
for (let i = 2; i < process.argv.length; i++) {
  const flag = process.argv[i];
  const value = () => {
    const next = process.argv[++i];
    if (next === undefined) fail(`${flag} needs a value`);
    return next;
  };
  if (flag === '--npm') options.npm = resolve(value());
  else if (flag === '--chromium') options.chromium = value();
  else if (flag === '--lifetime') options.lifetime = Number(value());
  else if (flag === '--profile') options.profile = resolve(value());
  else if (flag === '--page-port') options.pagePort = Number(value());
  else if (flag === '--control-port') options.controlPort = Number(value());
  else if (flag === '--quiet') options.quiet = true;
  else fail(`unknown argument ${flag}`);
}

function fail(message) {
  process.stderr.write(`driver: ${message}\n`);
  process.exit(2);
}

function log(message) {
  if (!options.quiet) process.stderr.write(`driver: ${message}\n`);
}

// playwright-core from the installed peers, never a browser of its own.
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const requireFromPeers = createRequire(join(options.npm, 'package.json'));
const { chromium } = requireFromPeers('playwright-core');
const modules = join(options.npm, 'node_modules');

// What the page server serves: the page, and the packages' own dist files.
const files = {
  '/page.html': [join(here, 'page.html'), 'text/html; charset=utf-8'],
  '/page.js': [join(here, 'page.js'), 'text/javascript; charset=utf-8'],
  '/dist/global/index.iife.js': [join(modules, '@mcp-b/global/dist/index.iife.js'), 'text/javascript; charset=utf-8'],
  '/dist/relay/embed.js': [join(modules, '@mcp-b/webmcp-local-relay/dist/browser/embed.js'), 'text/javascript; charset=utf-8'],
  '/dist/relay/widget.html': [join(modules, '@mcp-b/webmcp-local-relay/dist/browser/widget.html'), 'text/html; charset=utf-8'],
  '/dist/relay/widget.js': [join(modules, '@mcp-b/webmcp-local-relay/dist/browser/widget.js'), 'text/javascript; charset=utf-8'],
};
for (const [, [path]] of Object.entries(files)) {
  await readFile(path).catch(() => fail(`${path} is missing: run tests/peers/install`));
}

const pageServer = createServer(async (request, response) => {
  const path = new URL(request.url, 'http://127.0.0.1').pathname;
  const file = files[path];
  if (path === '/favicon.ico') {
    response.writeHead(204).end();
    return;
  }
  if (!file) {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  try {
    const body = await readFile(file[0]);
    response.writeHead(200, { 'content-type': file[1], 'cache-control': 'no-store' }).end(body);
  } catch (error) {
    response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error}\n`);
  }
});

// Port 0: whichever port the kernel gives.
function listen(server, port) {
  return new Promise((done, failed) => {
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => done(server.address().port));
  });
}

const pagePort = await listen(pageServer, options.pagePort);
const origin = `http://127.0.0.1:${pagePort}`;

// Debian's Chromium, headless, with a fresh profile; no background traffic on a closed network.
if (options.profile && (await stat(options.profile).catch(() => null))) fail(`--profile ${options.profile} exists already`);
const profile = options.profile || join(await mkdtemp(join(tmpdir(), 'tool-mediator-browser-')), 'profile');
const context = await chromium.launchPersistentContext(profile, {
  executablePath: options.chromium,
  headless: true,
  chromiumSandbox: false,
  timeout: 60_000,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
log(`Chromium ${context.browser()?.version() ?? ''} up (profile ${profile}); page server on ${origin}`);

const tabs = new Map();
let nextTab = 1;

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, failed) => {
      timer = setTimeout(() => failed(new Error(`${what} took more than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function tab(id) {
  const entry = tabs.get(Number(id));
  if (!entry) throw Object.assign(new Error(`no tab ${id}`), { status: 404 });
  return entry;
}

const routes = {
  'GET /health': async () => ({ ok: true, origin, tabs: [...tabs.keys()] }),
  'POST /open': async (body) => {
    const query = new URLSearchParams();
    if (body.relayPort !== undefined) query.set('relayPort', String(body.relayPort));
    if (body.relayId !== undefined) query.set('relayId', String(body.relayId));
    const url = `${origin}/page.html?${query}`;
    const page = await context.newPage();
    const id = nextTab++;
    const entry = { page, url, console: [] };
    tabs.set(id, entry);
    page.on('console', (message) => entry.console.push(`${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => entry.console.push(`pageerror: ${error.message}`));
    page.on('frameattached', (frame) => entry.console.push(`frame attached: ${frame.url()}`));
    await page.goto(url, { timeout: 30_000 });
    await page.waitForFunction(() => window.seedPage !== undefined, null, { timeout: 30_000 });
    await withTimeout(page.evaluate(() => window.seedPage.ready), 30_000, 'registering the tools');
    log(`tab ${id} open: ${url}`);
    return { tab: id, url };
  },
  'POST /register': async (body) => {
    const { page } = tab(body.tab);
    await withTimeout(page.evaluate(() => window.seedPage.registerExtra()), 10_000, 'registering srch_imgs');
    return { tab: Number(body.tab), tools: await page.evaluate(() => window.seedPage.tools()) };
  },
  'GET /calls': async (_, query) => ({ calls: await tab(query.get('tab')).page.evaluate(() => window.seedPage.calls()) }),
  'GET /tools': async (_, query) => ({ tools: await tab(query.get('tab')).page.evaluate(() => window.seedPage.tools()) }),
  'GET /console': async (_, query) => ({ console: tab(query.get('tab')).console }),
  'POST /screenshot': async (body) => {
    if (typeof body.path !== 'string') throw Object.assign(new Error('a path is needed'), { status: 400 });
    await tab(body.tab).page.screenshot({ path: body.path, fullPage: true, timeout: 30_000 });
    return { path: body.path };
  },
  'POST /close': async (body) => {
    const entry = tab(body.tab);
    tabs.delete(Number(body.tab));
    await withTimeout(entry.page.close(), 10_000, 'closing the tab');
    log(`tab ${body.tab} closed`);
    return { closed: Number(body.tab) };
  },
  'POST /shutdown': async () => {
    setImmediate(() => shutdown('asked to', 0));
    return { bye: true };
  },
};

function readBody(request) {
  return new Promise((done, failed) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => {
      text += chunk;
      if (text.length > 1 << 20) failed(new Error('body too large'));
    });
    request.on('end', () => {
      try {
        done(text ? JSON.parse(text) : {});
      } catch (error) {
        failed(Object.assign(error, { status: 400 }));
      }
    });
    request.on('error', failed);
  });
}

const controlServer = createServer(async (request, response) => {
  const url = new URL(request.url, 'http://127.0.0.1');
  const route = routes[`${request.method} ${url.pathname}`];
  let status = 200;
  let answer;
  try {
    if (!route) throw Object.assign(new Error(`no route ${request.method} ${url.pathname}`), { status: 404 });
    const body = await readBody(request);
    answer = await withTimeout(route(body, url.searchParams), 60_000, `${request.method} ${url.pathname}`);
  } catch (error) {
    status = error.status || 500;
    answer = { error: String(error.message || error) };
    log(`${request.method} ${url.pathname}: ${answer.error}`);
  }
  const text = `${JSON.stringify(answer)}\n`;
  response
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    .end(text);
});
const controlPort = await listen(controlServer, options.controlPort);

let stopping = false;
async function shutdown(why, code) {
  if (stopping) return;
  stopping = true;
  log(`shutting down (${why})`);
  const hard = setTimeout(() => process.exit(code || 1), 10_000);
  hard.unref();
  try {
    await context.close();
  } catch (error) {
    log(`closing Chromium: ${error}`);
  }
  if (!options.profile) await rm(dirname(profile), { recursive: true, force: true }).catch(() => {});
  controlServer.close();
  pageServer.close();
  process.exit(code);
}

process.on('SIGTERM', () => shutdown('SIGTERM', 0));
process.on('SIGINT', () => shutdown('SIGINT', 0));
if (fstatSync(0).isFIFO()) {
  process.stdin.on('end', () => shutdown('standard input closed', 0));
  process.stdin.on('error', () => shutdown('standard input failed', 0));
  process.stdin.resume();
}
setTimeout(() => shutdown(`--lifetime ${options.lifetime} s reached`, 3), options.lifetime * 1000).unref();
context.on('close', () => shutdown('Chromium went away', stopping ? 0 : 4));

process.stdout.write(
  `${JSON.stringify({ control: `http://127.0.0.1:${controlPort}`, origin, page: `${origin}/page.html` })}\n`,
);
