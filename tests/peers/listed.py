"""The smallest MCP server, for tests of what the mediator makes of a listing.

    python listed.py TOOLS_JSON

Speaks MCP over stdio: answers initialize, lists the tools given (a JSON array, written as
they are), and answers a tools/call of any of them with `called NAME`. Notifications are read
and ignored.
"""

import json
import sys

tools = json.loads(sys.argv[1])
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
