#!/usr/bin/env node
// The runner's helpers (tests/conformance-2026/run calls them; nothing here starts a server):
//
// (A free port and waiting for a server to answer are tests/conformance/harness.mjs's `port` and
// `wait`, which run calls too.)
//   node harness.mjs required REQUIREMENTS     the server scenarios a requirements file (the
//                                              suite's requirements/2026-07-28.yaml) scores, one
//                                              a line, then `-` and those it runs unscored
//   node harness.mjs judge COMBINATION RESULTS_DIR REQUIRED_FILE DIRECT_RESULTS_DIR EXPECTATIONS
//                                              judge one combination; prints its line and any
//                                              detail, writes RESULTS_DIR/../verdict.json
//   node harness.mjs total VERDICT...          the closing line `conformance-2026: N passed,
//                                              M failed`; exits 1 when anything was unexpected
//
// How the suite reports (@modelcontextprotocol/conformance 0.2.0-alpha, `server --requirements
// 2026-07-28 -o DIR`): one folder per scenario run, DIR/server-<scenario>-<ISO time with : and .
// as ->/checks.json, an array of checks {id, status, errorMessage?} whose status is SUCCESS,
// FAILURE, WARNING (a SHOULD not met), SKIPPED or INFO (a log line). Judged here:
//   direct      each scored scenario passes (no check fails); the unscored are only reported;
//   through     each scenario that passed directly, scored or not, passes with the same checks:
//               none fails, none warns that did not directly, none that succeeded is missing;
//               or it differs exactly as EXPECTATIONS (expectations.json) says for that
//               combination: the checks it names fail or warn, and nothing else differs.
import fs from 'node:fs';
import path from 'node:path';

import { readResults, verdicts as verdictsRanked } from '../conformance/results.mjs';

const RANK = { SUCCESS: 0, SKIPPED: 0, WARNING: 1, FAILURE: 2 };

function fail(message) {
  process.stderr.write(`harness: ${message}\n`);
  process.exit(2);
}

// ---- the requirements -------------------------------------------------------------------------

/** The `server:` list and the server-leg `not_scored` entries of a requirements file. */
function required(file) {
  const scored = [];
  const unscored = [];
  let section = '';
  let pending;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\S/.test(line) && !line.startsWith('#')) section = line.replace(/:.*/, '');
    const item = /^ {2}- (?:scenario: )?(\S+)\s*$/.exec(line);
    if (section === 'server' && item) scored.push(item[1]);
    if (section === 'not_scored') {
      if (item) pending = item[1];
      const leg = /^ {4}leg: (\S+)/.exec(line);
      if (leg && pending) {
        if (leg[1] === 'server') unscored.push(pending);
        pending = undefined;
      }
    }
  }
  if (scored.length === 0) fail(`no server scenario found in ${file}`);
  console.log([...scored, '-', ...unscored].join('\n'));
}

// ---- judging ----------------------------------------------------------------------------------

/** check id -> { status: the worst of its statuses (SKIPPED as SUCCESS), message } */
const verdicts = (checks) => verdictsRanked(checks, RANK);

const fails = (checks) => [...verdicts(checks ?? []).entries()].filter(([, v]) => v.status === 'FAILURE');

/** What differs in a run of a scenario from its direct run. */
function differences(checks, directChecks) {
  if (!checks) return [{ kind: 'no result', id: '-', message: 'the suite wrote no checks.json for it' }];
  const mine = verdicts(checks);
  const direct = verdicts(directChecks);
  const found = [];
  for (const [id, { status, message }] of mine) {
    if (status === 'FAILURE') found.push({ kind: 'fails', id, message });
    else if (status === 'WARNING' && direct.get(id)?.status !== 'WARNING') found.push({ kind: 'warns', id, message });
  }
  for (const [id, { status }] of direct) {
    if (status === 'SUCCESS' && !mine.has(id)) {
      found.push({ kind: 'missing', id, message: 'succeeded directly, not checked here' });
    }
  }
  return found;
}

function judge(combination, resultsDir, requiredFile, directDir, expectationsFile) {
  const expectations = JSON.parse(fs.readFileSync(expectationsFile, 'utf8')).differences ?? [];
  const lines = fs.readFileSync(requiredFile, 'utf8').split('\n').filter(Boolean);
  const scored = lines.slice(0, lines.indexOf('-'));
  const unscored = lines.slice(lines.indexOf('-') + 1);
  const results = readResults(resultsDir);
  const isDirect = path.resolve(resultsDir) === path.resolve(directDir);
  const direct = isDirect ? results : readResults(directDir);

  const passed = [];
  const expected = [];
  const unexpected = [];
  let judged;
  if (isDirect) {
    judged = scored;
    for (const name of scored) {
      const checks = results.get(name);
      const failing = checks ? fails(checks) : [['-', { message: 'the suite wrote no checks.json for it' }]];
      if (failing.length === 0) passed.push(name);
      else unexpected.push({ name, found: failing.map(([id, v]) => ({ kind: 'fails', id, message: v.message })) });
    }
  } else {
    // What passed directly, scored or not, must pass here too.
    judged = [...scored, ...unscored].filter((name) => direct.has(name) && fails(direct.get(name)).length === 0);
    for (const name of judged) {
      const found = differences(results.get(name), direct.get(name));
      const expectation = expectations.find((e) => e.scenario === name && (e.combinations ?? []).includes(combination));
      if (!expectation) {
        if (found.length === 0) passed.push(name);
        else unexpected.push({ name, found });
        continue;
      }
      // A difference by design: exactly the checks it names fail or warn, nothing else differs.
      const differing = found.filter((d) => d.kind !== 'missing').map((d) => d.id).sort();
      const want = [...(expectation.differing_checks ?? [])].sort();
      if (found.length === 0) {
        const message = 'passes, but expectations.json says it differs here: remove the entry';
        unexpected.push({ name, found: [{ kind: 'stale', id: '-', message }] });
      } else if (JSON.stringify(differing) === JSON.stringify(want)) {
        expected.push(name);
      } else {
        const named = { kind: 'expected', id: want.join(',') || '-', message: 'expectations.json names these checks' };
        unexpected.push({ name, found: [...found, named] });
      }
    }
  }
  const unscoredPassing = unscored.filter((name) => results.has(name) && fails(results.get(name)).length === 0);

  // What the runner saw besides the suite's results (a process that exited early, a panic in a
  // log): one line each in problems.txt beside the results, each counted as a failure.
  const problemsFile = path.join(path.dirname(path.resolve(resultsDir)), 'problems.txt');
  const problems = fs.existsSync(problemsFile) ? fs.readFileSync(problemsFile, 'utf8').split('\n').filter(Boolean) : [];
  for (const problem of problems) {
    unexpected.push({ name: 'runner', found: [{ kind: 'saw', id: '-', message: problem }] });
  }

  const good = passed.length + expected.length;
  const what = isDirect ? 'required pass' : 'of those passing directly as expected';
  let line = `${combination.padEnd(14)} ${String(good).padStart(3)}/${judged.length} ${what}`;
  const notes = [`unscored passing: ${unscoredPassing.length}/${unscored.length}`];
  if (expected.length) notes.push(`${expected.length} differing by design: ${expected.join(', ')}`);
  const odd = unexpected.filter((u) => u.name !== 'runner').map((u) => u.name);
  if (odd.length) notes.push(`UNEXPECTED: ${odd.length > 5 ? `${odd.length} scenarios` : odd.join(', ')}`);
  if (problems.length) notes.push(`${problems.length} problem${problems.length > 1 ? 's' : ''} running it`);
  line += ` (${notes.join('; ')})`;
  if (process.env.ELAPSED) line += `, ${process.env.ELAPSED} s`;
  console.log(line);
  const details = unexpected.flatMap(({ name, found }) =>
    found.map((d) => `    ${name}: ${d.kind}${d.id === '-' ? '' : ` ${d.id}`}: ${d.message}`)
  );
  for (const detail of details.slice(0, 40)) console.log(detail);
  const folder = path.dirname(path.resolve(resultsDir));
  if (details.length > 40) console.log(`    ... ${details.length - 40} more in ${folder}/verdict.json`);
  const verdict = { combination, passed: good, failed: unexpected.length, passing: passed, expected, unexpected };
  fs.writeFileSync(path.join(folder, 'verdict.json'), JSON.stringify({ ...verdict, unscoredPassing }, null, 2));
}

function total(files) {
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    const verdict = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += verdict.passed;
    failed += verdict.failed;
  }
  console.log(`conformance-2026: ${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

// ---- command line -----------------------------------------------------------------------------

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case 'required':
    if (args.length !== 1) fail('usage: required REQUIREMENTS_FILE');
    required(args[0]);
    break;
  case 'judge':
    if (args.length !== 5) fail('usage: judge COMBINATION RESULTS_DIR REQUIRED_FILE DIRECT_RESULTS_DIR EXPECTATIONS');
    judge(...args);
    break;
  case 'total':
    total(args);
    break;
  default:
    fail(`unknown command ${JSON.stringify(command)}: required, judge or total`);
}
