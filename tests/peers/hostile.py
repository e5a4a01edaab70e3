"""A hostile MCP server for the proxy's limit tests: standard library only.

    python3 hostile.py [--flood N] [--burst-on-list M] [--garbage N] [--tools N] [--deaf]

Speaks just enough MCP over stdio (initialize, tools/list, tools/call, ping) and misbehaves:
  --flood N          after `notifications/initialized`, sends N notifications/tools/list_changed
  --burst-on-list M  answers every tools/list, then sends M more list_changed notifications
  --garbage N        after `notifications/initialized`, writes N lines that are not JSON-RPC
  --tools N          lists N more tools, `item_tool_<i>`, each with a small schema
  --deaf             after answering `initialize`, reads nothing more (and never exits by itself)
Tools:
  stats              the counts so far: tools/list requests, and messages it received that were
                     not JSON-RPC 2.0 requests, notifications or answers (the proxy must not
                     forward any), and requests that came without an id (`without_id`, the
                     proxy must not forward any either)
  big {bytes}        answers with a result line of about `bytes` bytes (whose structured
                     content has a key named `method`, as an HTTP tool's might)
  spew {bytes}       first writes about `bytes` of notifications/message lines, then answers
  sloppy             answers without `"jsonrpc": "2.0"`
  hang               never answers
  ask_client         sends the client a roots/list request, then answers; what the client
                     answered to it shows in `stats` (`client_answers`)
"""

import json
import sys
import time

out = sys.stdout.buffer


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def option(name, default=0):
    args = sys.argv[1:]
    return int(args[args.index(name) + 1]) if name in args else default


def main():
    flood, burst, garbage = option("--flood"), option("--burst-on-list"), option("--garbage")
    lists, unexpected, client_answers, without_id = 0, 0, [], 0
    tools = [
        {"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}}
        for name, description in [
            ("stats", "Counts what this server has seen."),
            ("big", "Answers with one very long line."),
            ("spew", "Writes many log notifications before answering."),
            ("sloppy", "Answers without saying which JSON-RPC it speaks."),
            ("hang", "Never answers."),
            ("ask_client", "Asks the client for its roots."),
        ]
    ]
    tools += [
        {"name": f"item_tool_{i}", "description": f"Reads item {i} of the store by its id.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
        for i in range(option("--tools"))
    ]
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            unexpected += 1
            continue
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            unexpected += 1
            continue
        method, id = message.get("method"), message.get("id")
        if method is None:
            client_answers.append(message)
            continue
        if "id" in message and not (isinstance(id, str) or (isinstance(id, int) and not isinstance(id, bool))):
            unexpected += 1
            continue
        if "id" not in message and not method.startswith("notifications/"):
            without_id += 1
            continue
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }})
            if "--deaf" in sys.argv:
                while True:
                    time.sleep(3600)
        elif method == "notifications/initialized":
            for _ in range(flood):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            for n in range(garbage):
                out.write(b"not JSON-RPC, line %d\n" % n)
            out.flush()
        elif method == "tools/list":
            lists += 1
            send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
            for _ in range(burst):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            text = ""
            if name == "stats":
                text = json.dumps({"lists": lists, "unexpected": unexpected, "client_answers": client_answers,
                                   "without_id": without_id})
            elif name == "big":
                text = "x" * int(arguments.get("bytes", 0))
                send({"jsonrpc": "2.0", "id": id, "result": {
                    "structuredContent": {"method": "GET", "status": 200},
                    "content": [{"type": "text", "text": text}]}})
                continue
            elif name == "hang":
                continue
            elif name == "ask_client":
                send({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
                text = "asked"
            elif name == "sloppy":
                out.write(json.dumps({"id": id, "result": {"content": []}}).encode() + b"\n")
                out.flush()
                continue
            elif name == "spew":
                chunk = {"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "y" * 1000}}
                line = json.dumps(chunk).encode() + b"\n"
                for _ in range(int(arguments.get("bytes", 0)) // len(line)):
                    out.write(line)
                out.flush()
                text = "spewed"
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": id, "result": {}})
        elif id is not None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
