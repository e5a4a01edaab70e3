"""Scenarios for the proxy's end-to-end tests, driven by the official MCP Python SDK.

    python client.py SCENARIO COMMAND [ARGS...]

COMMAND is what the SDK starts: the proxy with its server, or a server directly; a URL alone
is a Streamable HTTP endpoint the SDK connects to. Each scenario
prints one JSON object on stdout; the Rust tests read it and assert. Failures raise, which
prints a traceback and exits non-zero.
"""

import json
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


async def list_names(session):
    names, cursor = [], None
    while True:
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


def is_url(argv):
    """A URL alone is a Streamable HTTP endpoint; anything else a command to start (stdio)."""
    return len(argv) == 1 and argv[0].startswith(("http://", "https://"))


def transport(argv):
    return streamable_http_client(argv[0]) if is_url(argv) else stdio_client(server(argv))


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
        tools, cursor = [], None
        while True:
            page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
            tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools]
            cursor = page.next_cursor
            if not cursor:
                return tools

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


SCENARIOS = {
    "disclose": lambda argv, *rest: disclose(argv),
    "call": lambda argv, name, arguments: call(argv, name, arguments),
    "load": lambda argv, sequential, concurrent: load(argv, int(sequential), int(concurrent)),
    "server-requests": lambda argv: server_requests(argv),
    "modern": lambda argv: modern(argv),
    "browser": lambda argv, control_url, relay_port, relay_id: browser(argv, control_url, relay_port, relay_id),
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
