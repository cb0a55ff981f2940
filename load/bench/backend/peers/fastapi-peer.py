"""FastAPI + uvicorn (one worker, uvloop, httptools) serving an MLP in numpy over the Open
Inference Protocol: the Python stack's peer row in bench:backend. The weights come from the
model's ONNX file, written out by load/bench/backend/peers/mlp-graph.ts into PEER_GRAPH_DIR.

Env: PEER_GRAPH_DIR, PEER_MODEL_NAME, PEER_MODEL_VERSION, HOST. Prints the same `listening` log
line as the Node servers, on a port the OS picks.
"""
import json
import os
import socket
import sys

import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

GRAPH_DIR = os.environ["PEER_GRAPH_DIR"]
MODEL_NAME = os.environ["PEER_MODEL_NAME"]
MODEL_VERSION = os.environ["PEER_MODEL_VERSION"]

with open(os.path.join(GRAPH_DIR, "graph.json")) as f:
    GRAPH = json.load(f)
TENSORS = {
    name: np.fromfile(os.path.join(GRAPH_DIR, f"{name}.f32"), dtype="<f4").reshape(shape)
    for name, shape in GRAPH["shapes"].items()
}


def forward(x):
    for step in GRAPH["steps"]:
        op = step["op"]
        if op == "sub":
            x = x - TENSORS[step["operand"]]
        elif op == "mul":
            x = x * TENSORS[step["operand"]]
        elif op == "gemm":
            x = x @ TENSORS[step["weight"]] + TENSORS[step["bias"]]
        elif op == "relu":
            x = np.maximum(x, 0)
        elif op == "softmax":
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            x = e / e.sum(axis=-1, keepdims=True)
    return x


app = FastAPI()


@app.post("/v2/models/{model}/infer")
async def infer(model: str, request: Request):
    body = json.loads(await request.body())
    tensor = body["inputs"][0]
    x = np.asarray(tensor["data"], dtype=np.float32).reshape(tensor["shape"])
    y = forward(x)
    return JSONResponse({
        "model_name": MODEL_NAME,
        "model_version": MODEL_VERSION,
        "id": body.get("id", ""),
        "outputs": [{"name": GRAPH["output"], "shape": list(y.shape), "datatype": "FP32", "data": y.ravel().tolist()}],
    })


@app.get("/v2/health/ready")
async def ready():
    return {"ready": True}


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((os.environ.get("HOST", "127.0.0.1"), 0))
    host, port = sock.getsockname()
    config = uvicorn.Config(app, loop="uvloop", http="httptools", workers=1, access_log=False, log_level="warning", lifespan="off")
    print(json.dumps({"level": "info", "msg": "listening", "url": f"http://{host}:{port}"}), flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
