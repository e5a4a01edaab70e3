"""A soak of a listening gateway: SESSIONS MCP sessions over Streamable HTTP calling `echo` for
SECONDS, then the gateway's memory, open files and processes before and after.

    python soak.py URL PID [SESSIONS [SECONDS [TOOLS [ARGUMENT]]]]

URL is the gateway's endpoint (`http://127.0.0.1:P/mcp`), PID its process id (read from /proc:
VmRSS, VmHWM, open descriptors, and the processes under it). Each session is opened with
`initialize` and closed with DELETE; session n calls the n-th of TOOLS (comma-separated echo
tools taking ARGUMENT, `echo` and `text` by default) round robin; each call's answer must carry its own text.
Prints one JSON object: calls, errors (and what the first five were), wrong answers, calls a second, and the gateway's figures
at the start, every minute of the load (so a soak shows whether memory and open files stay
flat), right after the load and 10 s after the sessions closed. The load is bounded: it stops by itself
after SECONDS, and sends traffic to URL alone (use 127.0.0.1).
"""

import asyncio
import json
import os
import sys
import time

import httpx2 as httpx

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def answer_of(response):
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    return json.loads(text) if text else None


def figures(pid):
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(next(line.split()[1] for line in status.splitlines() if line.startswith(name)))
    children = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children += 1
    return {
        "rss_kib": field("VmRSS:"),
        "hwm_kib": field("VmHWM:"),
        "open_files": len(os.listdir(f"/proc/{pid}/fd")),
        "children": children,
    }


def note(counts, why):
    """Keeps what the first few errors were: a count alone says nothing of the cause."""
    kept = counts.setdefault("first_errors", [])
    if len(kept) < 5:
        kept.append(why)


async def sample(pid, until, samples):
    """The gateway's figures every minute until the load ends."""
    while time.monotonic() + 60 <= until:
        await asyncio.sleep(60)
        samples.append(figures(pid))


async def session(client, url, number, until, counts, tool, argument):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
    response = await client.post(url, json=init, headers=HEADERS)
    session_id = response.headers.get("mcp-session-id")
    headers = dict(HEADERS, **({"mcp-session-id": session_id} if session_id else {}))
    await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    call = 0
    while time.monotonic() < until:
        call += 1
        text = f"session {number} call {call}"
        message = {"jsonrpc": "2.0", "id": call, "method": "tools/call",
                   "params": {"name": tool, "arguments": {argument: text}}}
        try:
            answer = answer_of(await client.post(url, json=message, headers=headers))
            said = json.dumps(answer)
            if answer is None or "error" in answer:
                counts["errors"] += 1
                note(counts, "answer: " + said[:160])
            elif text not in said or f"{text}0" in said:
                counts["wrong"] += 1
            else:
                counts["calls"] += 1
        except Exception as error:  # a refused or broken connection is an error of the run
            counts["errors"] += 1
            note(counts, f"{type(error).__name__}: {error!r}"[:200])
    if session_id:
        await client.delete(url, headers={"mcp-session-id": session_id})


async def main():
    url, pid = sys.argv[1], int(sys.argv[2])
    sessions = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    tools = sys.argv[5].split(",") if len(sys.argv) > 5 else ["echo"]
    argument = sys.argv[6] if len(sys.argv) > 6 else "text"
    samples = []
    before = figures(pid)
    counts = {"calls": 0, "errors": 0, "wrong": 0}
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        began = time.monotonic()
        until = began + seconds
        await asyncio.gather(
            sample(pid, until, samples),
            *(session(client, url, n, until, counts, tools[n % len(tools)], argument) for n in range(sessions)),
        )
        took = time.monotonic() - began
    after_load = figures(pid)
    await asyncio.sleep(10)
    print(json.dumps({
        "sessions": sessions, "seconds": round(took, 1), **counts,
        "calls_a_second": round(counts["calls"] / took, 1),
        "gateway": {"before": before, "each_minute": samples, "after_load": after_load, "settled": figures(pid)},
    }))


asyncio.run(main())
