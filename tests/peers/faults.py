"""Puts faults in front of a real MCP server, for the proxy's tests.

    python faults.py [--garbage] [--crash-on-call TOOL] [--hang-while FILE] [--hold-while FILE]
                     -- COMMAND [ARGS...]

Relays stdin to the server and its stdout back, line by line, and:
  --garbage             after the server's first answer, writes lines that are not JSON-RPC:
                        plain text, broken JSON carrying an id, and a response to nobody
  --crash-on-call TOOL  when a tools/call for TOOL arrives, exits with status 7 before the
                        server sees it (a server that crashes mid-call)
  --hang-while FILE     while FILE exists, what the client sends is swallowed: the server
                        runs on and answers nothing (a server that hangs)
  --hold-while FILE     while FILE exists, what the client sends is held back, and passed on in
                        order once FILE is gone (a server slow to answer, that then answers)
"""

import json
import os
import subprocess
import sys
import threading
import time


def main():
    args = sys.argv[1:]
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    garbage = "--garbage" in options
    crash_on = options[options.index("--crash-on-call") + 1] if "--crash-on-call" in options else None
    hang_while = options[options.index("--hang-while") + 1] if "--hang-while" in options else None
    hold_while = options[options.index("--hold-while") + 1] if "--hold-while" in options else None

    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    lock = threading.Lock()

    def write(line):
        with lock:
            out.write(line)
            out.flush()

    def downstream():
        first = True
        for line in server.stdout:
            write(line)
            if first and garbage:
                first = False
                write(b"this is not JSON-RPC\n")
                write(b'{"jsonrpc":"2.0","id":41,"method":"roots/list",\n')
                write(b'{"jsonrpc":"2.0","id":"nobody-asked","result":{}}\n')
        os._exit(server.wait())

    threading.Thread(target=downstream, daemon=True).start()
    for line in sys.stdin.buffer:
        if hang_while is not None and os.path.exists(hang_while):
            continue
        while hold_while is not None and os.path.exists(hold_while):
            time.sleep(0.05)
        if crash_on is not None:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("method") == "tools/call":
                if (message.get("params") or {}).get("name") == crash_on:
                    server.kill()
                    os._exit(7)
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()
    os._exit(server.wait())


if __name__ == "__main__":
    main()
