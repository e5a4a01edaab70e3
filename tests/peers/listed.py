"""The smallest MCP server, for tests of what the mediator makes of a listing.

    python listed.py TOOLS_JSON
    python listed.py @FILE

Speaks MCP over stdio: answers initialize, lists the tools given (a JSON array, written as
they are; or read from FILE when it starts, so a test changes them without changing the command
line), and answers a tools/call of any of them with `called NAME` (`called NAME: TEXT` when the
call gives an argument `text`). Notifications are read and ignored. With `LISTED_LOG` set, it
appends `started` to that file when it starts and `listed` each time it is listed: a test counts
how often a server was started and listed.
"""

import json
import os
import sys


def log(what):
    if os.environ.get("LISTED_LOG"):
        with open(os.environ["LISTED_LOG"], "a") as file:
            file.write(what + "\n")


given = sys.argv[1]
if given.startswith("@"):
    with open(given[1:]) as file:
        given = file.read()
tools = json.loads(given)
log("started")
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "listed", "version": "1"}}
    elif message["method"] == "ping":
        result = {}
    elif message["method"] == "tools/list":
        log("listed")
        result = {"tools": tools}
    else:
        called = "called " + message["params"]["name"]
        text = (message["params"].get("arguments") or {}).get("text")
        if isinstance(text, str):
            called += ": " + text
        result = {"content": [{"type": "text", "text": called}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
