"""Scenarios for the proxy's end-to-end tests, driven by the official MCP Python SDK.

    python client.py SCENARIO [SCENARIO ARGUMENTS...] -- COMMAND [ARGS...]

COMMAND is what the SDK starts: the proxy with its server, or a server directly; a URL alone
is a Streamable HTTP endpoint the SDK connects to (signing in by the client credentials grant
when MCP_CLIENT_ID, MCP_CLIENT_SECRET and MCP_ISSUER are set). Each scenario
prints one JSON object on stdout; the Rust tests read it and assert. Failures raise, which
prints a traceback and exits non-zero.

The gateway's scenarios (`tool-mediator gateway`, several servers behind one endpoint):

  gateway-tour CALLS READS PROMPT
      Lists every page of tools, resources, resource templates and prompts (a kind the
      server does not declare in its capabilities is listed as null), then makes CALLS
      (JSON `[[tool, arguments], ...]`) one after another, reads READS (JSON `[uri, ...]`)
      and gets PROMPT (JSON `[name, arguments]`, or `null` for none). Prints `tools`,
      `resources` (uris), `templates` (uriTemplates), `prompts` (names), `calls` (each the
      result's text; `isError: TEXT` for an error result, `error CODE: MESSAGE` for a
      JSON-RPC error), `reads` (each the contents' texts, or `error CODE: MESSAGE`) and
      `prompt` (the messages' texts).
  gateway-tour-modern CALLS READS PROMPT
      `gateway-tour` with the SDK's default client: server/discover first (2026-07-28), the
      initialize handshake only if the gateway refuses it; also prints `protocol`.
  gateway-kill PLAN
      A server dies under a call and comes back. PLAN is a JSON object:
        pid_file  the --pid-file of the named.py server A (tests/peers/named.py)
        sleep     A's `sleep` tool as listed; called with {"seconds": 60}
        tools     A's tools as listed: gone after the kill, back after the restart
        other     [tool, arguments]: a call to another server while A is down
        whoami    A's `whoami` as listed: called once A is back
      Lists, starts the sleep call, waits for A to write PID_FILE.sleeping, kills A
      (SIGKILL), and records: the pending call's error, the other call's answer, the list
      once A's tools are gone and once they are back (each within 30 s, listing again at
      each notifications/tools/list_changed) with how many list_changed notifications came
      on the way, A's answer to whoami, and A's process ids before and after.
  gateway-concurrent TOOLS [CALLS [SESSIONS]]
      Opens SESSIONS sessions at once (4; to a URL each is a Streamable HTTP session of its
      own) and makes CALLS calls (100) all in flight together, call n from session
      n % SESSIONS to tool n % len(TOOLS). TOOLS is a JSON list of echo-like tools: each
      `[tool, argument]`, or a name alone for the argument `text`; each call sends its own
      text and its answer must contain it. Prints the counts, the wrong answers and the errors.
"""

import contextlib
import json
import os
import signal
import sys
import urllib.request

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def server(argv):
    return StdioServerParameters(command=argv[0], args=argv[1:])


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "text", None) is not None)


class Notifications:
    """Collects what the server (through the proxy) notifies; signals tools/list_changed."""

    def __init__(self):
        self.methods = []
        self.tools_changed = anyio.Event()

    async def __call__(self, message):
        if isinstance(message, Exception):
            return
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method is None:
            return
        self.methods.append(method)
        if method == "notifications/tools/list_changed":
            self.tools_changed.set()


async def every_page(list_page, field):
    """Every item of a paginated list (`session.list_tools`, `"tools"`), following nextCursor."""
    items, cursor = [], None
    while True:
        page = await list_page(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            return items


async def list_names(session):
    return [tool.name for tool in await every_page(session.list_tools, "tools")]


def is_url(argv):
    """A URL alone is a Streamable HTTP endpoint; anything else a command to start (stdio)."""
    return len(argv) == 1 and argv[0].startswith(("http://", "https://"))


class Kept:
    """Tokens and client information kept in memory, for the SDK's OAuth providers."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def transport(argv):
    """stdio, or Streamable HTTP to a URL; there, with MCP_CLIENT_ID, MCP_CLIENT_SECRET and
    MCP_ISSUER set, signed in as the SDK signs in by the client credentials grant: refused
    with a 401, it reads the endpoint's resource metadata, the issuer's metadata, and asks the
    issuer for a token for that resource."""
    if not is_url(argv):
        return stdio_client(server(argv))
    client_id = os.environ.get("MCP_CLIENT_ID")
    if client_id is None:
        return streamable_http_client(argv[0])
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.shared._httpx_utils import create_mcp_http_client

    auth = ClientCredentialsOAuthProvider(
        server_url=argv[0],
        storage=Kept(),
        client_id=client_id,
        client_secret=os.environ["MCP_CLIENT_SECRET"],
        issuer=os.environ["MCP_ISSUER"],
    )
    return streamable_http_client(argv[0], http_client=create_mcp_http_client(auth=auth))


async def legacy(argv, body, **callbacks):
    notes = Notifications()
    async with transport(argv) as (read, write):
        async with ClientSession(read, write, message_handler=notes, **callbacks) as session:
            init = await session.initialize()
            return await body(session, notes, init)


async def disclose(argv):
    """Lists, calls a category tool, waits for tools/list_changed, lists again, calls a member."""

    async def body(session, notes, init):
        first = await list_names(session)
        category = next(name for name in first if name.endswith("_tools"))
        notes.tools_changed = anyio.Event()
        expansion = await session.call_tool(category, {})
        with anyio.fail_after(10):
            await notes.tools_changed.wait()
        second = await list_names(session)
        members = [name for name in (expansion.structured_content or {}).get("tools", [])]
        return {
            "list_changed_capability": init.capabilities.tools.list_changed,
            "server": init.server_info.name,
            "first": first,
            "category": category,
            "expansion": text_of(expansion),
            "members": [member["name"] if isinstance(member, dict) else member for member in members],
            "notified": notes.tools_changed.is_set(),
            "second": second,
        }

    return await legacy(argv, body)


async def call(argv, name, arguments):
    """One call; prints the result or the error."""

    async def body(session, notes, init):
        await list_names(session)
        try:
            result = await session.call_tool(name, json.loads(arguments))
            return {"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
        except Exception as error:  # the SDK raises MCPError for JSON-RPC errors
            return {"error": {"code": getattr(getattr(error, "error", None), "code", None), "message": str(error)}}

    return await legacy(argv, body)


async def load(argv, sequential, concurrent):
    """`sequential` echo calls one after another, then `concurrent` in flight at once; every
    answer must carry its own request's message."""

    async def body(session, notes, init):
        wrong = []

        async def echo(n):
            result = await session.call_tool("echo", {"message": f"message {n}"})
            if f"message {n}" not in text_of(result) or f"message {n}0" in text_of(result):
                wrong.append((n, text_of(result)))

        for n in range(sequential):
            await echo(n)
        async with anyio.create_task_group() as group:
            for n in range(sequential, sequential + concurrent):
                group.start_soon(echo, n)
        return {"calls": sequential + concurrent, "wrong": wrong}

    return await legacy(argv, body)


async def server_requests(argv):
    """Server-everything asks the client for its roots and for a sampling: both pass through."""

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/proxy-roots", name="proxy-roots")])

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled through the proxy"),
            model="test-model",
            stopReason="endTurn",
        )

    async def body(session, notes, init):
        names = await list_names(session)
        roots_result = await session.call_tool("get-roots-list", {})
        sampling_tool = next(name for name in names if "sampling" in name)
        sampled = await session.call_tool(sampling_tool, {"prompt": "hello", "maxTokens": 10})
        return {"names": names, "roots": text_of(roots_result), "sampling": text_of(sampled), "notes": notes.methods}

    return await legacy(argv, body, list_roots_callback=roots, sampling_callback=sampling)


async def modern(argv):
    """The SDK's high-level client in its default mode: server/discover first (2026-07-28),
    the initialize handshake only if the server does not answer it."""
    async with Client(argv[0] if is_url(argv) else server(argv)) as client:
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        category = next((name for name in names if name.endswith("_tools")), None)
        events = []
        async with client.listen(tools_list_changed=True) as subscription:
            honored = subscription.honored.model_dump(by_alias=True, exclude_none=True)
            expansion = await client.call_tool(category, {}) if category else None
            with anyio.fail_after(10):
                async for event in subscription:
                    events.append(type(event).__name__)
                    break
        again = await client.list_tools()
        return {
            "honored": honored,
            "events": events,
            "protocol": client.session.protocol_version,
            "server": getattr(client.session.server_info, "name", None),
            "names": names,
            "expansion": text_of(expansion) if expansion else None,
            "after": [tool.name for tool in again.tools],
        }


def control(url, path, body=None):
    """One request to tests/browser/driver.mjs's control API (blocking: run it in a thread)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


async def browser(argv, control_url, relay_port, relay_id):
    """The seed's browser story through the proxy: a page registers gt_usr, del and upd_prf with
    @mcp-b/global, webmcp-local-relay relays them, the proxy enhances them. Opens the page (via
    the driver), waits for the enhanced tools, calls them by their new names and arguments, has
    the page register one more tool, closes the tab."""

    async def ask(path, body=None):
        return await anyio.to_thread.run_sync(lambda: control(control_url, path, body))

    async def tools_of(session):
        tools = await every_page(session.list_tools, "tools")
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]

    def heard(notes):
        return notes.methods.count("notifications/tools/list_changed")

    async def until(session, notes, predicate, what, since):
        """Lists until `predicate(names)` holds, listing again at each tools/list_changed, then
        waits for the tools/list_changed that announces the change if none came yet (a listing
        can see a change before its notification arrives). Returns the tools and how many
        list_changed notifications came since `since`."""
        tools = []
        try:
            with anyio.fail_after(30):
                while True:
                    notes.tools_changed = anyio.Event()
                    tools = await tools_of(session)
                    if predicate([tool["name"] for tool in tools]):
                        break
                    await notes.tools_changed.wait()
        except TimeoutError:
            raise AssertionError(f"{what}: not within 30 s; last listed {[tool['name'] for tool in tools]}")
        if heard(notes) == since:
            with anyio.move_on_after(10):
                await notes.tools_changed.wait()
        return tools, heard(notes) - since

    def names(tools):
        return sorted(tool["name"] for tool in tools)

    async def call(session, name, arguments):
        result = await session.call_tool(name, arguments)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    page_tools = {"gt_usr", "del", "upd_prf", "srch_imgs"}
    enhanced = {"get_user", "delete_user", "update_profile"}

    async def body(session, notes, init):
        before = names(await tools_of(session))
        since = heard(notes)
        tab = (await ask("/open", {"relayPort": int(relay_port), "relayId": relay_id}))["tab"]
        opened, opened_notes = await until(
            session, notes, lambda listed: enhanced <= set(listed), "the page's tools, enhanced", since
        )
        calls = {
            "get_user": await call(session, "get_user", {"userId": 42, "email": "ada@example.com"}),
            "update_profile": await call(session, "update_profile", {"userId": 42, "displayName": "Ada", "bio": "Counts."}),
            "delete_user": await call(session, "delete_user", {"userId": 42}),
        }
        page_calls = (await ask(f"/calls?tab={tab}"))["calls"]
        since = heard(notes)
        await ask("/register", {"tab": tab})
        registered, registered_notes = await until(
            session,
            notes,
            lambda listed: len(set(listed) - set(names(opened))) > 0,
            "the tool registered later",
            since,
        )
        extra = [tool for tool in registered if tool["name"] not in names(opened)]
        since = heard(notes)
        await ask("/close", {"tab": tab})
        closed, closed_notes = await until(
            session,
            notes,
            lambda listed: not (set(listed) & (enhanced | page_tools | {tool["name"] for tool in extra})),
            "the page's tools leaving with the tab",
            since,
        )
        return {
            "server": init.server_info.name,
            "list_changed_capability": init.capabilities.tools.list_changed,
            "before": before,
            "opened": names(opened),
            "opened_notifications": opened_notes,
            "tools": {tool["name"]: tool for tool in opened if tool["name"] in enhanced},
            "calls": calls,
            "page_calls": page_calls,
            "registered": names(registered),
            "registered_notifications": registered_notes,
            "extra": extra,
            "closed": names(closed),
            "closed_notifications": closed_notes,
        }

    with anyio.fail_after(150):
        return await legacy(argv, body)


def error_text(error):
    """A JSON-RPC error as the gateway scenarios print it: `error CODE: MESSAGE`."""
    code = getattr(getattr(error, "error", None), "code", None)
    return f"error {code}: {error}"


def result_text(result):
    return f"isError: {text_of(result)}" if result.is_error else text_of(result)


def contents_text(result):
    """A resource's contents: the texts, a blob as its size."""
    return "".join(
        content.text if getattr(content, "text", None) is not None else f"[blob of {len(content.blob)} characters]"
        for content in result.contents
    )


async def gateway_tour(argv, calls, reads, prompt, modern=False):
    """Lists everything, calls tools, reads resources, gets a prompt: the merged view of a
    gateway's servers."""

    async def listed(capability, list_page, field, key):
        if capability is None:
            return None
        return [str(getattr(item, key)) for item in await every_page(list_page, field)]

    async def tour(session, capabilities, server_info):
        outcome = {
            "server": server_info.name if server_info else None,
            "protocol": session.protocol_version,
            "tools": await listed(capabilities.tools, session.list_tools, "tools", "name"),
            "resources": await listed(capabilities.resources, session.list_resources, "resources", "uri"),
            "templates": await listed(
                capabilities.resources, session.list_resource_templates, "resource_templates", "uri_template"
            ),
            "prompts": await listed(capabilities.prompts, session.list_prompts, "prompts", "name"),
            "calls": [],
            "reads": [],
            "prompt": None,
        }
        for name, arguments in json.loads(calls):
            try:
                outcome["calls"].append(result_text(await session.call_tool(name, arguments)))
            except Exception as error:  # the SDK raises MCPError for JSON-RPC errors
                outcome["calls"].append(error_text(error))
        for uri in json.loads(reads):
            try:
                outcome["reads"].append(contents_text(await session.read_resource(uri)))
            except Exception as error:
                outcome["reads"].append(error_text(error))
        wanted = json.loads(prompt)
        if wanted is not None:
            name, arguments = wanted
            try:
                got = await session.get_prompt(name, arguments)
                outcome["prompt"] = [
                    getattr(message.content, "text", None) or f"[{message.content.type}]" for message in got.messages
                ]
            except Exception as error:
                outcome["prompt"] = error_text(error)
        return outcome

    async def body(session, notes, init):
        return await tour(session, init.capabilities, init.server_info)

    with anyio.fail_after(120):
        if not modern:
            return await legacy(argv, body)
        # The SDK's default client: server/discover first, initialize only if that is refused.
        async with Client(argv[0] if is_url(argv) else server(argv)) as client:
            return await tour(client.session, client.server_capabilities, client.server_info)


async def gateway_tour_modern(argv, calls, reads, prompt):
    """`gateway-tour` with the SDK's default client (2026-07-28 where the gateway answers it)."""
    return await gateway_tour(argv, calls, reads, prompt, modern=True)


async def wait_for_file(path, what, seconds=30):
    with anyio.fail_after(seconds):
        while not os.path.exists(path):
            await anyio.sleep(0.02)
    with open(path) as file:
        return file.read().strip()


async def gateway_kill(argv, plan):
    """Server A dies under a call: the call fails, the others go on, A's tools leave the list
    and come back when the gateway has restarted A."""
    plan = json.loads(plan)
    pid_file, a_tools = plan["pid_file"], set(plan["tools"])

    counted = 0  # the list_changed notifications accounted for so far

    def changes(notes):
        return notes.methods.count("notifications/tools/list_changed")

    async def until(session, notes, predicate, what):
        """Lists until `predicate(names)` holds, listing again at each tools/list_changed, then
        waits (10 s at most) for the notification that announces the change if none came yet
        (a listing can see a change before its notification arrives). Returns the names and
        how many notifications came since the last time they were counted."""
        nonlocal counted
        names = []
        try:
            with anyio.fail_after(30):
                while True:
                    notes.tools_changed = anyio.Event()
                    names = await list_names(session)
                    if predicate(set(names)):
                        break
                    await notes.tools_changed.wait()
        except TimeoutError:
            raise AssertionError(f"{what}: not within 30 s; last listed {names}")
        if changes(notes) == counted:
            with anyio.move_on_after(10):
                await notes.tools_changed.wait()
        came, counted = changes(notes) - counted, changes(notes)
        return sorted(names), came

    async def body(session, notes, init):
        nonlocal counted
        before = await list_names(session)
        missing = a_tools - set(before)
        assert not missing, f"A's tools {sorted(missing)} are not listed: {before}"
        outcome = {"before": sorted(before)}
        sleeping = f"{pid_file}.sleeping"
        with contextlib.suppress(FileNotFoundError):
            os.remove(sleeping)
        pending = {}
        done = anyio.Event()

        async def sleep_call():
            try:
                pending["result"] = result_text(await session.call_tool(plan["sleep"], {"seconds": 60}))
            except Exception as error:
                pending["error"] = error_text(error)
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(sleep_call)
            await wait_for_file(sleeping, "A received the sleep call")
            pid = int(await wait_for_file(pid_file, "A's pid file"))
            counted = changes(notes)
            os.kill(pid, signal.SIGKILL)
            outcome["killed"] = pid
            try:
                with anyio.fail_after(30):
                    await done.wait()
            except TimeoutError:
                raise AssertionError("the call in flight in A was not answered within 30 s of A's death")
        outcome["pending"] = pending
        name, arguments = plan["other"]
        try:
            outcome["other"] = result_text(await session.call_tool(name, arguments))
        except Exception as error:
            outcome["other"] = error_text(error)
        outcome["gone"], outcome["gone_notifications"] = await until(
            session, notes, lambda names: not (names & a_tools), "A's tools leaving the list"
        )
        outcome["back"], outcome["back_notifications"] = await until(
            session, notes, lambda names: a_tools <= names, "A's tools coming back"
        )
        try:
            outcome["whoami"] = result_text(await session.call_tool(plan["whoami"], {}))
        except Exception as error:
            outcome["whoami"] = error_text(error)
        outcome["restarted"] = int(await wait_for_file(pid_file, "A's pid file"))
        outcome["notifications"] = notes.methods
        return outcome

    with anyio.fail_after(120):
        return await legacy(argv, body)


async def gateway_concurrent(argv, tools, calls=100, sessions=4):
    """`calls` calls at once from `sessions` sessions, spread over echo-like tools; every answer
    must carry its own call's text."""
    tools = [tool if isinstance(tool, list) else [tool, "text"] for tool in json.loads(tools)]
    wrong, errors, by_tool = [], [], {name: 0 for name, _ in tools}

    async def open_session(stack):
        read, write = await stack.enter_async_context(transport(argv))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    async def call(opened, n):
        name, argument = tools[n % len(tools)]
        text = f"<call {n} from session {n % sessions}>"
        try:
            result = await opened[n % sessions].call_tool(name, {argument: text})
        except Exception as error:  # the SDK raises MCPError for JSON-RPC errors
            errors.append([n, name, error_text(error)])
            return
        by_tool[name] += 1
        if text not in text_of(result) or result.is_error:
            wrong.append([n, name, text_of(result)])

    # One deadline around all of it: the transports' scopes must nest inside it. The sessions
    # are opened one after another (a transport is entered and left in the same task), all
    # before the first call: they are all open at once.
    with anyio.fail_after(180):
        async with contextlib.AsyncExitStack() as stack:
            opened = [await open_session(stack) for _ in range(sessions)]
            for index, session in enumerate(opened):
                names = set(await list_names(session))
                missing = {name for name, _ in tools} - names
                assert not missing, f"session {index} does not list {sorted(missing)}: {sorted(names)}"
            async with anyio.create_task_group() as group:
                for n in range(calls):
                    group.start_soon(call, opened, n)
    return {
        "sessions": sessions,
        "calls": calls,
        "answered": calls - len(errors),
        "by_tool": by_tool,
        "wrong": wrong,
        "errors": errors,
    }


SCENARIOS = {
    "disclose": lambda argv, *rest: disclose(argv),
    "call": lambda argv, name, arguments: call(argv, name, arguments),
    "load": lambda argv, sequential, concurrent: load(argv, int(sequential), int(concurrent)),
    "server-requests": lambda argv: server_requests(argv),
    "modern": lambda argv: modern(argv),
    "browser": lambda argv, control_url, relay_port, relay_id: browser(argv, control_url, relay_port, relay_id),
    "gateway-tour": lambda argv, calls, reads, prompt: gateway_tour(argv, calls, reads, prompt),
    "gateway-tour-modern": lambda argv, calls, reads, prompt: gateway_tour_modern(argv, calls, reads, prompt),
    "gateway-kill": lambda argv, plan: gateway_kill(argv, plan),
    "gateway-concurrent": lambda argv, tools, calls="100", sessions="4": gateway_concurrent(
        argv, tools, int(calls), int(sessions)
    ),
}


def main():
    scenario, rest = sys.argv[1], sys.argv[2:]
    # Scenario arguments come before `--`, the command after it.
    split = rest.index("--")
    arguments, argv = rest[:split], rest[split + 1 :]
    result = anyio.run(lambda: SCENARIOS[scenario](argv, *arguments))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
