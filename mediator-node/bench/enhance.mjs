// `npm run bench`: the binding's enhance of the enhance benchmark's tools against the same call
// in Rust, side by side in one process. The target: the crossing into JavaScript and back
// (JSON text each way) costs at most 2x the Rust time.
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'

import { Mediator } from '@tool-mediator/node'

// The native half, for what index.js does not show: the data, and a mediator's native handle.
const native = createRequire(import.meta.url)('../tool-mediator.node')
if (typeof native.benchmarkManifest !== 'function') {
  console.error('the addon was built without the bench feature: run `npm run bench`')
  process.exit(2)
}

const ROUNDS = Number(process.env.ROUNDS ?? 40)
const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]

console.log(`| tools | mediator | Rust, from tools | Rust, from JSON text | binding | ratio to Rust from tools (target <= 2x) | ratio to Rust from text |`)
console.log(`|---|---|---|---|---|---|---|`)
for (const size of [1_000, 10_000]) {
  const tools = JSON.parse(native.benchmarkManifest(size)).tools
  const text = JSON.stringify(tools)
  for (const fresh of [true, false]) {
    const rust = []
    const rustText = []
    const binding = []
    // The same settings on both sides: each side its own mediator, new every call or kept
    // (a kept one remembers the schemas it found valid).
    let inRustMediator = await native.createMediator({})
    let textMediator = await native.createMediator({})
    let mediator = await Mediator.create({ source: 'bench' })
    const rounds = size > 1_000 ? Math.ceil(ROUNDS / 4) : ROUNDS
    // Alternating, one call of each a round, so both see the same machine.
    for (let round = 0; round < rounds + 2; round++) {
      if (fresh) inRustMediator = await native.createMediator({})
      const [inRust] = await inRustMediator.benchmarkEnhanceInRust(text, 1)
      if (fresh) textMediator = await native.createMediator({})
      const fromText = await textMediator.benchmarkEnhanceTextInRust(text)
      if (fresh) mediator = await Mediator.create({ source: 'bench' })
      const start = performance.now()
      const enhanced = await mediator.enhance(tools)
      const elapsed = performance.now() - start
      if (enhanced.length === 0) throw new Error('nothing enhanced')
      if (round >= 2) {
        rust.push(inRust)
        rustText.push(fromText)
        binding.push(elapsed)
      }
    }
    const [r, t, b] = [median(rust), median(rustText), median(binding)]
    const kind = fresh ? 'new each call' : 'kept'
    const ms = (value) => `${value.toFixed(2)} ms`
    console.log(
      `| ${size.toLocaleString('en')} | ${kind} | ${ms(r)} | ${ms(t)} | ${ms(b)} | ${(b / r).toFixed(2)}x | ${(b / t).toFixed(2)}x |`,
    )
  }
}
