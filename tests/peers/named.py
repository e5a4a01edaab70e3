"""A small MCP server that says its name, for the gateway's tests: several of them behind one
gateway share tool names, and every answer tells which one answered.

    python named.py NAME [--tools N] [--tool TOOL]... [--pid-file PATH] [--list-changed]

Serves MCP over stdio with the MCP Python SDK's MCPServer:
  tools      whoami {}                 answers NAME
             echo {text}               answers `NAME: text`
             sleep {seconds}           sleeps that long (a number), then answers `NAME slept`
             tool_0 .. tool_{N-1}      with --tools N: one string argument `value`, a
                                       description each; tool_k answers `NAME tool_k`
             TOOL {}                   with --tool TOOL (as often as wanted): a tool of that
                                       exact name, answering `NAME called TOOL`
  prompt     greet {who}               one user message: `NAME greets who`
  resource   named://NAME/info         text NAME
  --pid-file PATH  writes the server's process id to PATH once it starts (replacing the file,
                   so a restarted server leaves its new id there), and to PATH.sleeping when a
                   `sleep` call begins: a test knows which process to kill, and that a call is
                   in flight in it.
  --list-changed   says in the handshake that it announces tool list changes (the SDK's
                   default is not to): a gateway may then keep its list until it does.
"""

import os
import sys
from typing import Annotated

import anyio
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from pydantic import Field


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def write_atomically(path, text):
    """Whoever reads `path` sees the old text or the new one, never a part."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def build(name, extra_tools, pid_file, named_tools=()):
    server = MCPServer(name, version="1")

    @server.tool(description="Says which server this is.", structured_output=False)
    def whoami() -> str:
        return name

    @server.tool(description="Answers the text, after the server's name.", structured_output=False)
    def echo(text: Annotated[str, Field(description="The text to answer with.")]) -> str:
        return f"{name}: {text}"

    @server.tool(description="Waits a number of seconds, then answers.", structured_output=False)
    async def sleep(seconds: Annotated[float, Field(description="How long to wait, in seconds.")]) -> str:
        if pid_file:
            write_atomically(f"{pid_file}.sleeping", str(os.getpid()))
        await anyio.sleep(seconds)
        return f"{name} slept"

    def extra(k):
        def tool(value: Annotated[str, Field(description="Any text; it is not used.")]) -> str:
            return f"{name} tool_{k}"

        return tool

    for k in range(extra_tools):
        server.add_tool(
            extra(k),
            name=f"tool_{k}",
            description=f"Extra tool number {k} of the server {name}, for tests that list many tools.",
            structured_output=False,
        )

    def called(tool_name):
        def tool() -> str:
            return f"{name} called {tool_name}"

        return tool

    for tool_name in named_tools:
        server.add_tool(
            called(tool_name),
            name=tool_name,
            description=f"A tool the test named {tool_name}; it says which server answered.",
            structured_output=False,
        )

    @server.prompt(description="A greeting from this server.")
    def greet(who: str) -> str:
        return f"{name} greets {who}"

    @server.resource(f"named://{name}/info", name="info", description="The server's name.", mime_type="text/plain")
    def info() -> str:
        return name

    return server


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit("usage: named.py NAME [--tools N] [--tool TOOL]... [--pid-file PATH] [--list-changed]")
    name = args[0]
    extra_tools = int(option(args, "--tools", 0))
    pid_file = option(args, "--pid-file")
    named_tools = [args[at + 1] for at, arg in enumerate(args[:-1]) if arg == "--tool"]
    server = build(name, extra_tools, pid_file, named_tools)
    if pid_file:
        write_atomically(pid_file, str(os.getpid()))
    if "--list-changed" not in args:
        return anyio.run(server.run_stdio_async)

    async def serve():
        lowlevel = server._lowlevel_server
        options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, options)

    anyio.run(serve)


if __name__ == "__main__":
    main()
