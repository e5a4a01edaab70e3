"""FastMCP's BM25SearchTransform over given tools and queries, for tests/search.rs to compare
with tool-mediator's search in one run.

    python fastmcp_search.py INPUT.json

INPUT is {"tools": [MCP tool, ...], "queries": [text, ...], "limit": N}. Prints one JSON array:
for each query, the names of the tools FastMCP's transform finds, best first. It calls the
transform's ranking directly (`_search`, what its `search_tools` tool calls), so no server or
client stands in between.
"""

import asyncio
import json
import sys

from fastmcp.server.transforms.search.bm25 import BM25SearchTransform
from fastmcp.tools import Tool


def main():
    with open(sys.argv[1]) as file:
        data = json.load(file)
    tools = [
        Tool(name=tool["name"], description=tool.get("description"), parameters=tool.get("inputSchema") or {"type": "object"})
        for tool in data["tools"]
    ]
    transform = BM25SearchTransform(max_results=data.get("limit", 5))

    async def search_all():
        return [[tool.name for tool in await transform._search(tools, query)] for query in data["queries"]]

    print(json.dumps(asyncio.run(search_all())))


if __name__ == "__main__":
    main()
