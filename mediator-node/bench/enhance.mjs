// `npm run bench`: the binding's enhance of the enhance benchmark's tools against the same call
// in Rust, side by side in one process. The target: the crossing into JavaScript and back
// (JSON text each way) costs at most 2x the Rust time.
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'

import { Mediator } from '@tool-mediator/node'

const native = createRequire(import.meta.url)('../tool-mediator.node')
if (typeof native.benchmarkManifest !== 'function') {
  console.error('the addon was built without the bench feature: run `npm run bench`')
  process.exit(2)
}

const ROUNDS = Number(process.env.ROUNDS ?? 40)
const median = (times) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]

console.log(`| tools | mediator | Rust enhance | binding enhance | ratio (target <= 2x) |`)
console.log(`|---|---|---|---|---|`)
for (const size of [1_000, 10_000]) {
  const tools = JSON.parse(native.benchmarkManifest(size)).tools
  const text = JSON.stringify(tools)
  for (const fresh of [true, false]) {
    const rust = []
    const binding = []
    let mediator = await Mediator.create({ source: 'bench' })
    const rounds = size > 1_000 ? Math.ceil(ROUNDS / 4) : ROUNDS
    // Alternating, one call of each a round, so both see the same machine.
    for (let round = 0; round < rounds + 2; round++) {
      const [inRust] = await native.benchmarkEnhanceInRust(text, 1, fresh)
      if (fresh) mediator = await Mediator.create({ source: 'bench' })
      const start = performance.now()
      const enhanced = await mediator.enhance(tools)
      const elapsed = performance.now() - start
      if (enhanced.length === 0) throw new Error('nothing enhanced')
      if (round >= 2) {
        rust.push(inRust)
        binding.push(elapsed)
      }
    }
    const [r, b] = [median(rust), median(binding)]
    const kind = fresh ? 'new each call' : 'reused'
    console.log(`| ${size.toLocaleString('en')} | ${kind} | ${r.toFixed(2)} ms | ${b.toFixed(2)} ms | ${(b / r).toFixed(2)}x |`)
  }
}
