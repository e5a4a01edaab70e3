// Types of @tool-mediator/node, written by hand and checked by `npm run typecheck`
// (test/types.ts uses every one of them the way a transport does).

/** A tool definition as MCP and WebMCP publish it. Fields the mediator does not know are kept. */
export interface Tool {
  name: string
  title?: string
  description?: string
  inputSchema?: JsonSchema
  outputSchema?: JsonSchema
  annotations?: ToolAnnotations
  _meta?: { [key: string]: unknown }
  [field: string]: unknown
}

export type JsonSchema = { [keyword: string]: unknown }

export interface ToolAnnotations {
  title?: string
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
  [hint: string]: unknown
}

/** What the mediator records under `_meta["tool-mediator/provenance"]` of a tool it changed. */
export interface Provenance {
  /** The name the source knows the tool by: calls go there under it. */
  originalName: string
  category?: string
  confidence: number
  /** Which transformer's answer was taken: `overrides`, `rules`, `llm`, `cached-llm`. */
  enhancedBy: string
  /** Exposed argument name to the source's. */
  argumentAliases?: { [exposed: string]: string }
  /** Fields the mediator guessed rather than read (a description, a schema). */
  inferred?: string[]
  originalDescription?: string
}

/** A JSON Schema with an object root, as MCP requires of tool schemas. */
export type ObjectSchema = {
  type: 'object'
  properties?: { [name: string]: object }
  required?: string[]
  [keyword: string]: unknown
}

/** An enhanced tool, as a consumer receives it: it always has an object input schema. */
export interface EnhancedTool extends Tool {
  inputSchema: ObjectSchema
  outputSchema?: ObjectSchema
  _meta?: { 'tool-mediator/provenance'?: Provenance; [key: string]: unknown }
}

/** Where tools come from: overrides are chosen by `source`. */
export interface ToolContext {
  /** A domain (`example.com`), an MCP server's name, an API's name. */
  source: string
  /** `api` unless told. */
  sourceType?: 'web' | 'api' | 'file' | 'manual'
}

/** A mediator's settings: the CLI's configuration file and flags, as one object. */
export interface MediatorOptions {
  /** A configuration file (TOML, or JSON by its extension), as the CLI's `--config`. None is
   * read unless named. */
  config?: string
  /** Directories of override files, after the configuration's (`--overrides`); they refine the built-in ones. */
  overrides?: string[]
  /** The curated override files built into the package: on unless `false` (`--no-builtin-overrides`). */
  builtinOverrides?: boolean
  /** Read the override directories again when they change (looked at every 2 s): sessions take
   * their last list in again and call their `onListChanged` callbacks. Off unless `true`. */
  watchOverrides?: boolean
  /** The rule-based transformer; on unless `false` (`--no-rules`). */
  rules?: boolean
  /** Dictionary files extending the built-in one (`--dictionary`). */
  dictionaries?: string[]
  /** A directory of prompt templates (`--prompts`). */
  prompts?: string
  /** The language model (`--llm`); `off` turns off one the configuration names. */
  llm?: 'anthropic' | 'openai' | 'openai-compatible' | 'off'
  model?: string
  llmUrl?: string
  llmDeadlineSecs?: number
  /** Ask the language model in the background: `enhance`, `toolMiddleware` and sessions answer
   * at once with the cache's answers and the rules', and sessions take the model's in when they
   * come (calling `onListChanged`); a later `enhance` of the same tools has them. `false` waits
   * for the model at every call that misses the cache. The configuration's `llm_in_background`
   * (true) unless told. */
  llmInBackground?: boolean
  /** The sled cache of the model's answers; on unless `false` (`--no-cache`). */
  cache?: boolean
  cacheDir?: string
  cacheTtlHours?: number
  /** Which tool names the consumer accepts: `mcp` (default) or `strict` (`[a-zA-Z0-9_-]{1,64}`). */
  clientProfile?: 'mcp' | 'strict'
  /** Never use an answer less confident than this, 0 to 1 (default 0). */
  minConfidence?: number
  /** Ask the language model about the tools the poisoning screen is unsure of (some evidence,
   * short of its threshold); its ruling can flag a tool, never clear one. The configuration's
   * `judge` (false) unless told. */
  judge?: boolean
  /** Ask the language model for its odds that each tool the screen did not flag is poisoned,
   * and flag those over this, 0 to 1 (an OpenAI or OpenAI-compatible model; calibrate it with
   * `tool-mediator lint --calibrate-judge`). Turns the judge on. */
  judgeThreshold?: number
  /** The context of `enhance`, `session` and `toolMiddleware` calls that give none. */
  source?: string
  sourceType?: ToolContext['sourceType']
}

export interface SessionOptions {
  /** Fold categories of at least this many tools into one category tool each; `false` lists
   * everything, folds nothing and searches nothing (`--no-disclosure`). The configuration's
   * `grouping_threshold` (5) unless told. */
  disclosure?: number | false
  /** What the client sees first of a large tool set: category tools and `search_tools`
   * (`both`), category tools alone, `search_tools` alone, or everything (`off`). The
   * configuration's `disclosure_mode` (`both`) unless told. */
  disclosureMode?: 'both' | 'categories' | 'search' | 'off'
  /** Fewer visible tools than this are listed whole, whatever the mode (0: never). The
   * configuration's `whole_below` (20) unless told. */
  wholeBelow?: number
  /** Leave out the tools the screen suspects of poisoning (text that speaks to the model or
   * hides text); without it they are listed, with a warning. The configuration's `quarantine`
   * (false) unless told. */
  quarantine?: boolean
  /** A lock file written by `tool-mediator pin` (`--locked`): a tool changed since it was
   * pinned is hidden (or listed with a warning, `onChange: 'warn'`), a new one is reported. */
  lock?: string
  /** What a lock does with a tool changed since it was pinned (`--on-change`): `hide` unless told. */
  onChange?: 'hide' | 'warn'
  /** Trust on first use (`--trust-on-first-use`): the source's tools are pinned the first time
   * they are seen, and a changed or new one is held back until `tool-mediator review` approves
   * it (the session takes the approval in within a second, and tells `onListChanged`). The
   * configuration's `trust_on_first_use` (false) unless told. */
  trustOnFirstUse?: boolean
  /** The pins file of trust on first use (`--pins-file`; turns it on). The configuration's
   * `pins_file`, else the platform data directory's `tool-mediator/pins.json`, unless told. */
  pinsFile?: string
}

/** One page of what a client sees: an MCP `ListToolsResult`. */
export type ToolPage = {
  tools: EnhancedTool[]
  /** Pass it back to `listTools` for the next page. */
  nextCursor?: string
}

/** An MCP `CallToolResult`, as the session answers one itself. */
export type CallToolResult = {
  content: Array<{ type: 'text'; text: string }>
  structuredContent?: { [key: string]: unknown }
  isError?: boolean
}

/** Where a call goes. */
export type Route =
  /** Answered by the session (a category tool, a group switch): send `result` to the client. */
  | { route: 'local'; result: CallToolResult }
  /** Call the source's tool `name` with `arguments`, both in the source's own names. */
  | { route: 'upstream'; name: string; arguments: { [argument: string]: unknown } }
  /** No such tool for this client now: answer as for an unknown tool. */
  | { route: 'notFound' }

export declare class Mediator {
  private constructor()
  /** Loads and checks everything the options name; rejects with the CLI's message when
   * something cannot be had (a bad override file, a missing API key asked for). */
  static create(options?: MediatorOptions): Promise<Mediator>
  /** The tools a consumer sees: enhanced, hidden ones left out, provenance under `_meta` for
   * changed ones. Rejects when a tool is malformed, naming it by its JSON pointer. */
  enhance(tools: Tool[], context?: ToolContext): Promise<EnhancedTool[]>
  /** A session for one client. */
  session(context?: ToolContext, options?: SessionOptions): Session
  /** The seed's middleware shape: `setToolMiddleware(mediator.toolMiddleware())`. */
  toolMiddleware(context?: ToolContext): (tools: Tool[]) => Promise<EnhancedTool[]>
}

export declare class Session {
  private constructor()
  /** What the client sees of `upstream` now; enhanced again only when the list changed. */
  listTools(upstream: Tool[], cursor?: string): Promise<ToolPage>
  /** Where the client's call `name(args)` goes. */
  routeCall(name: string, args?: { [argument: string]: unknown }): Promise<Route>
  /** Calls `callback` whenever the visible list changes (send
   * `notifications/tools/list_changed`). Does not keep Node running by itself. */
  onListChanged(callback: () => void): this
  /** Stops the list-changed callbacks (and following the override directories and reviews). */
  close(): void
}
