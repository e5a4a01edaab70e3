"""The model server tests/peers/model/serve starts (see there)."""
import argparse, os, sys, threading, time, urllib.request

import xllamacpp

parser = argparse.ArgumentParser(prog="serve")
parser.add_argument("model")
parser.add_argument("--port", type=int, default=8080)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--ctx", type=int, default=4096)
parser.add_argument("--alias", default="qwen2.5-coder-1.5b-instruct")
parser.add_argument("--embeddings", action="store_true", help="serve /v1/embeddings (an embedding model)")
args = parser.parse_args()
if not os.path.isfile(args.model):
    sys.exit(f"no model at {args.model}: run tests/peers/model/install")

params = xllamacpp.CommonParams()
params.model.path = args.model
params.model_alias = args.alias
params.n_ctx = args.ctx
if args.embeddings:
    params.embedding = True
    # A batch of texts is read in one pass: each text's tokens must fit a micro-batch.
    params.n_batch = args.ctx
    params.n_ubatch = args.ctx
params.n_parallel = 1
params.cpuparams.n_threads = args.threads
params.cpuparams_batch.n_threads = args.threads
params.hostnames = ["127.0.0.1"]
params.port = args.port
params.use_jinja = True
server = xllamacpp.Server(params)

url = f"http://127.0.0.1:{args.port}"
began = time.monotonic()
while True:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            if response.status == 200:
                break
    except OSError:
        pass
    if time.monotonic() - began > 300:
        sys.exit(f"the model server on {url} did not come up in 300 s")
    time.sleep(0.25)
print(f"ready {url}", flush=True)

if sys.stdin.isatty():
    while True:
        time.sleep(3600)
else:
    while sys.stdin.buffer.read(65536):  # until the harness lets go
        pass
    os._exit(0)
