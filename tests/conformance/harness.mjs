#!/usr/bin/env node
// The runner's helpers (tests/conformance/run calls them; nothing here starts a server):
//
//   node harness.mjs port                      a free TCP port on 127.0.0.1
//   node harness.mjs wait URL SECONDS PID      wait until URL answers HTTP at all (any status),
//                                              at most SECONDS; fail at once if PID has exited
//   node harness.mjs scenarios LIST_OUTPUT [server|auth]
//                                              the scenario names of `conformance list`: the
//                                              server ones, or the client authorization ones
//                                              `client --suite auth` runs
//   node harness.mjs judge COMBINATION RESULTS_DIR SCENARIOS_FILE DIRECT_RESULTS_DIR EXPECTATIONS
//                                              judge one combination's results (the direct one's
//                                              against the scenarios alone, any other against the
//                                              direct run and the expectations); prints its line
//                                              and any detail, writes RESULTS_DIR/../verdict.json
//   node harness.mjs total VERDICT...          the closing line `conformance: N passed, M failed`;
//                                              exits 1 when anything was unexpected
//
// How the suite reports (@modelcontextprotocol/conformance 0.1.16, `server --suite all -o DIR`):
// one folder per scenario run, DIR/server-<scenario>-<ISO time with : and . as ->/checks.json,
// an array of checks {id, name, description, status, errorMessage?, details?} whose status is
// SUCCESS, FAILURE, WARNING (a SHOULD not met) or INFO (a log of what was sent and received). A
// scenario that throws before its checks are written has no folder. `client -o DIR` writes
// DIR/auth/<scenario without auth/>-<time>/checks.json the same way. The suite's exit code says
// only whether some check failed, so each scenario is judged here from its checks.json.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { readResults, verdicts as verdictsRanked } from './results.mjs';

const RANK = { SUCCESS: 0, WARNING: 1, FAILURE: 2 };

function fail(message) {
  process.stderr.write(`harness: ${message}\n`);
  process.exit(2);
}

// ---- port, wait -------------------------------------------------------------------------------

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  console.log(port);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

async function wait(url, seconds, pid) {
  const deadline = Date.now() + Number(seconds) * 1000;
  let last = 'no attempt';
  while (Date.now() < deadline) {
    if (pid && !alive(Number(pid))) fail(`process ${pid} exited before ${url} answered`);
    try {
      const response = await fetch(url, {
        headers: { Accept: 'text/event-stream' },
        signal: AbortSignal.timeout(2000)
      });
      await response.body?.cancel();
      return; // any HTTP answer means it is listening
    } catch (error) {
      last = error.cause?.code ?? error.message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  fail(`${url} did not answer within ${seconds} s (last: ${last})`);
}

// ---- scenarios --------------------------------------------------------------------------------

function scenarios(listOutput, kind = 'server') {
  const names = [];
  const heading = kind === 'server' ? /^Server scenarios/i : /^Client scenarios/i;
  let inside = false;
  for (const line of fs.readFileSync(listOutput, 'utf8').split('\n')) {
    if (heading.test(line)) inside = true;
    else if (/^\S/.test(line)) inside = false;
    else if (inside) {
      const match = /^\s+-\s+(\S+)\s*(?:\[([^\]]*)\])?/.exec(line);
      if (!match) continue;
      // auth: the client authorization scenarios of `--suite auth`, those of a dated revision
      // since 2025-06-18 (not the 2025-03-26 compatibility ones, drafts or extensions).
      const revisions = (match[2] ?? '').split(',');
      if (kind === 'auth' && !(match[1].startsWith('auth/') && revisions.some((r) => /^\d{4}-\d{2}-\d{2}$/.test(r) && r >= '2025-06-18'))) continue;
      names.push(match[1]);
    }
  }
  if (names.length === 0) fail(`no ${kind} scenario found in ${listOutput}`);
  console.log(names.join('\n'));
}

// ---- judging ----------------------------------------------------------------------------------

/** check id -> { status: the worst of its SUCCESS/WARNING/FAILURE statuses, message } */
const verdicts = (checks) => verdictsRanked(checks, RANK);

/**
 * What differs in a scenario's run from the direct one: each check that fails, each that only
 * warns where it did not directly, each that succeeded directly and is not there.
 */
function differences(checks, directChecks) {
  if (!checks) return [{ kind: 'no result', id: '-', message: 'the suite wrote no checks.json for it' }];
  const mine = verdicts(checks);
  const direct = directChecks ? verdicts(directChecks) : new Map();
  const found = [];
  for (const [id, { status, message }] of mine) {
    if (status === 'FAILURE') found.push({ kind: 'fails', id, message });
    else if (status === 'WARNING' && direct.get(id)?.status !== 'WARNING') {
      found.push({ kind: 'warns', id, message });
    }
  }
  for (const [id, { status }] of direct) {
    if (status === 'SUCCESS' && !mine.has(id)) {
      found.push({ kind: 'missing', id, message: 'succeeded directly, not checked here' });
    }
  }
  return found;
}

function judge(combination, resultsDir, scenariosFile, directDir, expectationsFile) {
  const names = fs.readFileSync(scenariosFile, 'utf8').split('\n').filter(Boolean);
  const results = readResults(resultsDir);
  const isDirect = path.resolve(resultsDir) === path.resolve(directDir);
  const direct = isDirect ? null : readResults(directDir);
  const expectations = JSON.parse(fs.readFileSync(expectationsFile, 'utf8')).differences ?? [];

  const passed = [];
  const expected = [];
  const unexpected = [];
  const warned = [];
  for (const name of names) {
    const checks = results.get(name);
    if (checks && [...verdicts(checks).values()].some((v) => v.status === 'WARNING')) warned.push(name);
    const found = differences(checks, isDirect ? null : direct.get(name));
    const expectation = expectations.find(
      (e) => e.scenario === name && (e.combinations ?? []).includes(combination)
    );
    if (!expectation) {
      // Directly, warnings are the server's SHOULDs left undone; only failures count.
      const counted = isDirect ? found.filter((d) => d.kind !== 'warns') : found;
      if (counted.length === 0) passed.push(name);
      else unexpected.push({ name, found: counted });
      continue;
    }
    // An expected difference: exactly the checks it names fail; the checks a scenario skips
    // once one has failed may be missing; nothing else differs.
    const failing = found.filter((d) => d.kind === 'fails').map((d) => d.id).sort();
    const others = found.filter((d) => d.kind !== 'fails' && d.kind !== 'missing');
    const want = [...(expectation.failing_checks ?? [])].sort();
    if (others.length === 0 && failing.length > 0 && JSON.stringify(failing) === JSON.stringify(want)) {
      expected.push(name);
    } else if (found.length === 0) {
      unexpected.push({
        name,
        found: [{ kind: 'stale', id: '-', message: 'passes, but expectations.json says it differs here: remove the entry' }]
      });
    } else {
      unexpected.push({
        name,
        found: [
          ...found,
          { kind: 'expected', id: want.join(',') || '-', message: 'expectations.json names these failing checks' }
        ]
      });
    }
  }
  for (const name of results.keys()) {
    if (!names.includes(name)) warned.push(`${name} (not in the scenario list)`);
  }

  // What the runner saw besides the suite's results (a process that exited early, a panic in a
  // log): one line each in problems.txt beside the results, each counted as a failure.
  const problemsFile = path.join(path.dirname(path.resolve(resultsDir)), 'problems.txt');
  const problems = fs.existsSync(problemsFile)
    ? fs.readFileSync(problemsFile, 'utf8').split('\n').filter(Boolean)
    : [];
  for (const problem of problems) unexpected.push({ name: 'runner', found: [{ kind: 'saw', id: '-', message: problem }] });

  const total = names.length;
  const good = passed.length + expected.length;
  let line = `${combination.padEnd(20)} ${String(good).padStart(3)}/${total} as expected`;
  const notes = [];
  if (expected.length) notes.push(`${expected.length} differing by design: ${expected.join(', ')}`);
  if (warned.length) notes.push(`warnings in ${warned.join(', ')}`);
  const odd = unexpected.filter((u) => u.name !== 'runner').map((u) => u.name);
  if (odd.length) notes.push(`UNEXPECTED: ${odd.length > 5 ? `${odd.length} scenarios` : odd.join(', ')}`);
  if (problems.length) notes.push(`${problems.length} problem${problems.length > 1 ? 's' : ''} running it`);
  if (notes.length) line += ` (${notes.join('; ')})`;
  if (process.env.ELAPSED) line += `, ${process.env.ELAPSED} s`;
  console.log(line);
  const details = [];
  const unanswered = unexpected.filter((u) => u.found.length === 1 && u.found[0].kind === 'no result');
  if (results.size === 0 && unanswered.length > 0) {
    details.push(`    no result for any of the ${unanswered.length} scenarios`);
  }
  for (const { name, found } of unexpected) {
    if (results.size === 0 && unanswered.some((u) => u.name === name)) continue;
    for (const d of found) details.push(`    ${name}: ${d.kind}${d.id === '-' ? '' : ` ${d.id}`}: ${d.message}`);
  }
  const shown = 40;
  for (const line of details.slice(0, shown)) console.log(line);
  if (details.length > shown) console.log(`    ... ${details.length - shown} more in ${path.dirname(path.resolve(resultsDir))}/verdict.json`);

  fs.writeFileSync(
    path.join(path.dirname(path.resolve(resultsDir)), 'verdict.json'),
    JSON.stringify({ combination, passed: good, failed: unexpected.length, unexpected, expected, warned }, null, 2)
  );
}

function total(files) {
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    const verdict = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += verdict.passed;
    failed += verdict.failed;
  }
  console.log(`conformance: ${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

// ---- command line -----------------------------------------------------------------------------

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case 'port':
    await freePort();
    break;
  case 'wait':
    if (args.length < 2) fail('usage: wait URL SECONDS [PID]');
    await wait(...args);
    break;
  case 'scenarios':
    if (args.length < 1 || args.length > 2 || !['server', 'auth', undefined].includes(args[1])) {
      fail('usage: scenarios LIST_OUTPUT [server|auth]');
    }
    scenarios(args[0], args[1]);
    break;
  case 'judge':
    if (args.length !== 5) fail('usage: judge COMBINATION RESULTS_DIR SCENARIOS_FILE DIRECT_RESULTS_DIR EXPECTATIONS');
    judge(...args);
    break;
  case 'total':
    total(args);
    break;
  default:
    fail(`unknown command ${JSON.stringify(command)}: port, wait, scenarios, judge or total`);
}
