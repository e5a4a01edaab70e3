'use strict'
// The JavaScript half of @tool-mediator/node: objects to JSON text and back around the native
// half (src/lib.rs), contexts checked, and the middleware closure. The types are index.d.ts.

const native = require('./tool-mediator.node')

const SOURCE_TYPES = ['web', 'api', 'file', 'manual']

function contextOf(context, fallback, where) {
  const chosen = context ?? fallback
  if (chosen === undefined) {
    throw new TypeError(`${where}: no source: pass a context ({source: 'example.com'}) or create the mediator with one`)
  }
  if (typeof chosen.source !== 'string' || chosen.source === '') {
    throw new TypeError(`${where}: context.source must be a non-empty string (a domain, a server's name)`)
  }
  if (chosen.sourceType !== undefined && !SOURCE_TYPES.includes(chosen.sourceType)) {
    throw new TypeError(`${where}: context.sourceType must be one of ${SOURCE_TYPES.join(', ')}, not ${JSON.stringify(chosen.sourceType)}`)
  }
  return chosen
}

function count(value, name, where, least = 0) {
  if (value !== undefined && !(Number.isInteger(value) && value >= least && value <= 0xffffffff)) {
    throw new TypeError(`${where}: ${name} must be a whole number from ${least}, not ${JSON.stringify(value)}`)
  }
}

function toolsText(tools, where) {
  if (!Array.isArray(tools)) {
    throw new TypeError(`${where}: tools must be an array of tool definitions`)
  }
  return JSON.stringify(tools)
}

class Mediator {
  #native
  #context

  /** Use `Mediator.create`. */
  constructor(handle, context) {
    if (!(handle instanceof native.Mediator)) {
      throw new TypeError('use Mediator.create(options) to make a mediator')
    }
    this.#native = handle
    this.#context = context
  }

  static async create(options = {}) {
    const { source, sourceType, ...settings } = options
    count(settings.llmDeadlineSecs, 'llmDeadlineSecs', 'Mediator.create')
    count(settings.cacheTtlHours, 'cacheTtlHours', 'Mediator.create', 1)
    const context = source === undefined ? undefined : contextOf({ source, sourceType }, undefined, 'Mediator.create')
    return new Mediator(await native.createMediator(settings), context)
  }

  async enhance(tools, context) {
    const { source, sourceType } = contextOf(context, this.#context, 'enhance')
    const text = toolsText(tools, 'enhance')
    // A tool the mediator left as it came comes back as its index: the caller's own object.
    const enhanced = JSON.parse(await this.#native.enhance(text, source, sourceType))
    for (let index = 0; index < enhanced.length; index++) {
      if (typeof enhanced[index] === 'number') enhanced[index] = tools[enhanced[index]]
    }
    return enhanced
  }

  session(context, options = {}) {
    const { source, sourceType } = contextOf(context, this.#context, 'session')
    const disclosure = options.disclosure === false ? 0 : options.disclosure
    if (options.disclosure !== false) count(options.disclosure, 'disclosure (or false)', 'session', 2)
    count(options.wholeBelow, 'wholeBelow', 'session')
    const { disclosureMode, wholeBelow, quarantine, lock, onChange, trustOnFirstUse, pinsFile } = options
    for (const [name, value] of [['quarantine', quarantine], ['trustOnFirstUse', trustOnFirstUse]]) {
      if (value !== undefined && typeof value !== 'boolean') {
        throw new TypeError(`session: ${name} must be true or false`)
      }
    }
    for (const [name, value] of [['lock', lock], ['onChange', onChange], ['pinsFile', pinsFile]]) {
      if (value !== undefined && typeof value !== 'string') {
        throw new TypeError(`session: ${name} must be a string`)
      }
    }
    const native = this.#native.session(source, sourceType, {
      disclosure,
      disclosureMode,
      wholeBelow,
      quarantine,
      lock,
      onChange,
      trustOnFirstUse,
      pinsFile,
    })
    return new Session(native)
  }

  toolMiddleware(context) {
    const chosen = contextOf(context, this.#context, 'toolMiddleware')
    return (tools) => this.enhance(tools, chosen)
  }
}

class Session {
  #native

  constructor(handle) {
    this.#native = handle
  }

  async listTools(upstream, cursor) {
    const text = toolsText(upstream, 'listTools')
    return JSON.parse(await this.#native.listTools(text, cursor))
  }

  async routeCall(name, args) {
    if (typeof name !== 'string') {
      throw new TypeError('routeCall: name must be a string')
    }
    return JSON.parse(await this.#native.routeCall(name, args === undefined ? undefined : JSON.stringify(args)))
  }

  onListChanged(callback) {
    if (typeof callback !== 'function') {
      throw new TypeError('onListChanged: callback must be a function')
    }
    this.#native.onListChanged(() => callback())
    return this
  }

  close() {
    this.#native.close()
  }
}

module.exports = { Mediator, Session }
