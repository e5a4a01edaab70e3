// Reading what the official MCP conformance suite wrote: one folder per scenario run
// (`server-NAME-TIME/` for server scenarios, `auth/NAME-TIME/` for client ones), each with a
// checks.json, an array of checks {id, status, errorMessage?}. Shared by tests/conformance and
// tests/conformance-2026, whose harnesses import it.
import fs from 'node:fs';
import path from 'node:path';

function fail(message) {
  process.stderr.write(`harness: ${message}\n`);
  process.exit(2);
}

/** scenario name -> its checks, from a results folder; a scenario run twice is an error. */
export function readResults(dir) {
  const results = new Map();
  if (!fs.existsSync(dir)) return results;
  const entries = fs.readdirSync(dir).flatMap((entry) =>
    fs.statSync(path.join(dir, entry)).isDirectory() && !entry.startsWith('server-')
      ? fs.readdirSync(path.join(dir, entry)).map((inner) => `${entry}/${inner}`)
      : [entry]
  );
  for (const entry of entries) {
    const match = /^(?:server-)?(.+)-(\d{4}-\d{2}-\d{2}T[\d-]+Z)$/.exec(entry);
    if (!match) continue;
    const file = path.join(dir, entry, 'checks.json');
    let checks;
    try {
      checks = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (!Array.isArray(checks)) throw new Error('not an array');
    } catch (error) {
      checks = [{ id: 'checks.json', status: 'FAILURE', errorMessage: `${file}: ${error.message}` }];
    }
    if (results.has(match[1])) fail(`${dir} has two results for ${match[1]}`);
    results.set(match[1], checks);
  }
  return results;
}

/** check id -> { status: the worst of its statuses as `rank` orders them, message }; a status
 * `rank` has not (INFO) is a log line, not a verdict. */
export function verdicts(checks, rank) {
  const byId = new Map();
  for (const check of checks) {
    if (!(check.status in rank)) continue;
    const known = byId.get(check.id);
    if (!known || rank[check.status] > rank[known.status]) {
      byId.set(check.id, { status: check.status, message: check.errorMessage ?? check.description ?? '' });
    }
  }
  return byId;
}
