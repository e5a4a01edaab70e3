"""The smallest MCP server, for tests of what the mediator makes of a listing.

    python listed.py TOOLS_JSON
    python listed.py @FILE

Speaks MCP over stdio: answers initialize, lists the tools given (a JSON array, written as
they are; or read from FILE when it starts, so a test changes them without changing the command
line), and answers a tools/call of any of them with `called NAME`. Notifications are read and
ignored.
"""

import json
import sys

given = sys.argv[1]
if given.startswith("@"):
    with open(given[1:]) as file:
        given = file.read()
tools = json.loads(given)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "listed", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": tools}
    else:
        result = {"content": [{"type": "text", "text": "called " + message["params"]["name"]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
