// An MCP server written with the official TypeScript SDK links the binding as its middleware
// (test/seed-server.mts); the official Python SDK's client talks to it over stdio
// (tests/peers/client.py, installed by tests/peers/install).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '../..')
const server = [process.execPath, join(here, 'dist/test/seed-server.mjs'), join(root, 'mediator/overrides')]

/** Runs a scenario of the Python client against `command`; returns what it printed. */
function client(scenario, args, command) {
  const python = join(root, '.tools/venv/bin/python')
  assert.ok(existsSync(python), 'the MCP Python SDK is not installed: run tests/peers/install (it puts it in .tools/)')
  const output = execFileSync(python, [join(root, 'tests/peers/client.py'), scenario, ...args, '--', ...command], {
    cwd: root,
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return JSON.parse(output.toString().trim().split('\n').at(-1))
}

describe('an MCP server linking the binding, asked by the Python SDK', () => {
  test('the category folds, expands with list_changed, and its tools are the enhanced ones', () => {
    const outcome = client('disclose', [], [...server, 'session', '2'])
    assert.equal(outcome.server, 'seed-server')
    assert.equal(outcome.list_changed_capability, true)
    assert.deepEqual(outcome.first, ['user_tools'])
    assert.deepEqual(outcome.members, ['get_user', 'delete_user', 'update_profile'])
    assert.equal(outcome.notified, true)
    assert.deepEqual(outcome.second, ['delete_user', 'get_user', 'update_profile'])
  })

  test("a call by the enhanced name reaches the handler under the source's name and arguments", () => {
    const outcome = client('call', ['get_user', '{"userId": 7, "email": "ada@example.com"}'], server)
    assert.deepEqual(outcome.result.structuredContent.received, {
      name: 'gt_usr',
      arguments: { uid: 7, eml: 'ada@example.com' },
    })
    const unknown = client('call', ['gt_usr', '{}'], server)
    assert.match(unknown.error.message, /Unknown tool: gt_usr/)
  })

  test("the seed's tools => tools middleware alone, calls mapped back by provenance", () => {
    const outcome = client('call', ['update_profile', '{"userId": 7, "displayName": "Ada"}'], [...server, 'middleware'])
    assert.deepEqual(outcome.result.structuredContent.received, {
      name: 'upd_prf',
      arguments: { uid: 7, nm: 'Ada' },
    })
  })
})

describe("the README's example", () => {
  const example = join(here, '../examples/page-server.mts')

  test('is in the README as written', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    assert.ok(readme.includes(readFileSync(example, 'utf8')), 'README.md shows mediator-node/examples/page-server.mts whole')
  })

  test('runs: the model calls get_user, the page runs gt_usr with its own argument names', () => {
    const outcome = client('call', ['get_user', '{"userId": 7}'], [process.execPath, join(here, 'dist/examples/page-server.mjs')])
    assert.deepEqual(outcome.result.content, [{ type: 'text', text: 'gt_usr ran with {"uid":7}' }])
  })
})
