"""Load generators: wrk when it is on PATH, otherwise bench.loadgen (Python, asyncio + uvloop).

Both run in a child process pinned to the load generator's CPUs, against 127.0.0.1 only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.loadgen import LoadResult, LoadSpec
from bench.processes import ROOT, child_env, child_setup


class Loader(Protocol):
    name: str
    description: str

    def run(self, spec: LoadSpec) -> LoadResult: ...


@dataclass
class PythonLoader:
    cpus: set[int] | None
    name: str = "python-asyncio"
    description: str = (
        "bench.loadgen: Python asyncio + uvloop, hand-parsed HTTP/1.1 keep-alive (wrk not found on PATH)"
    )

    def run(self, spec: LoadSpec) -> LoadResult:
        timeout = spec.warmup + spec.duration + 60
        done = subprocess.run(
            [sys.executable, "-m", "bench.loadgen"],
            input=spec.to_json().encode(),
            capture_output=True,
            env=child_env(),
            cwd=ROOT,
            timeout=timeout,
            preexec_fn=child_setup(self.cpus),
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the load generator failed:\n{done.stderr.decode(errors='replace')[-3000:]}")
        return LoadResult.from_json(done.stdout.decode())


def _lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal for ASCII text


_DONE = """
local threads = {}
setup = function(thread) table.insert(threads, thread) end
response = function(status, headers, body)
  if status ~= 200 or string.find(body, '"errors":[{', 1, true) then bench_errors = bench_errors + 1 end
end
init = function(args) bench_errors = 0 end
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  for _, thread in ipairs(threads) do errors = errors + thread:get("bench_errors") end
  io.write(string.format(
    'BENCH_JSON {"requests": %d, "duration_us": %d, "errors": %d, "mean": %f, "p50": %f, ' ..
    '"p90": %f, "p99": %f, "max": %f}\\n',
    summary.requests, summary.duration, errors, latency.mean, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency.max))
end
"""


def wrk_script(spec: LoadSpec) -> str:
    req = spec.request
    headers = {"Content-Type": "application/json", **req.headers}
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(req.body)}"]
    lines += [f"wrk.headers[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items()]
    cycle = req.follow_cycle
    if cycle is not None:
        # One thread, many connections: wrk does not say which connection asks, so the steps are
        # shared; follow X and unfollow X may then overlap on two connections (idempotent anyway).
        tokens = ", ".join(_lua_string(t) for t in cycle.tokens)
        lines += [
            f"local tokens = {{{tokens}}}",
            f"local follow_q = {_lua_string(cycle.follow_query)}",
            f"local unfollow_q = {_lua_string(cycle.unfollow_query)}",
            "local step = 0",
            "request = function()",
            "  local pair = math.floor(step / 2)",
            f'  local target = "{cycle.target_prefix}" .. ({cycle.first_target} + pair % {cycle.targets})',
            "  local q = follow_q",
            "  if step % 2 == 1 then q = unfollow_q end",
            "  step = step + 1",
            "  local token = tokens[(pair % #tokens) + 1]",
            '  local body = \'{"query": "\' .. q .. \'", "variables": {"userId": "\' .. target .. \'"}}\'',
            '  wrk.headers["Authorization"] = "Bearer " .. token',
            "  return wrk.format(nil, nil, nil, body)",
            "end",
        ]
    return "\n".join(lines) + "\n" + _DONE


@dataclass
class WrkLoader:
    cpus: set[int] | None
    binary: str
    name: str = "wrk"
    description: str = "wrk (1 thread, keep-alive), Lua script for the POST bodies and headers"

    def _wrk(self, spec: LoadSpec, script: Path, seconds: float) -> dict[str, float]:
        url = f"http://{spec.host}:{spec.port}{spec.request.path}"
        args = [
            self.binary,
            "-t1",
            f"-c{spec.concurrency}",
            f"-d{max(1, round(seconds))}s",
            "-s",
            str(script),
        ]
        done = subprocess.run(
            [*args, url],
            capture_output=True,
            timeout=seconds + 60,
            preexec_fn=child_setup(self.cpus),
            check=False,
        )
        out = done.stdout.decode(errors="replace")
        for line in out.splitlines():
            if line.startswith("BENCH_JSON "):
                parsed: dict[str, float] = json.loads(line.removeprefix("BENCH_JSON "))
                return parsed
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{out[-2000:]}{done.stderr.decode()[-2000:]}")

    def run(self, spec: LoadSpec) -> LoadResult:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "bench.lua"
            script.write_text(wrk_script(spec))
            warm = self._wrk(spec, script, spec.warmup) if spec.warmup > 0 else {"requests": 0}
            main = self._wrk(spec, script, spec.duration)
        seconds = main["duration_us"] / 1e6
        requests = int(main["requests"])
        return LoadResult(
            loader=self.name,
            requests=requests,
            seconds=seconds,
            rps=requests / seconds if seconds else 0.0,
            mean_ms=main["mean"] / 1000,
            p50_ms=main["p50"] / 1000,
            p90_ms=main["p90"] / 1000,
            p99_ms=main["p99"] / 1000,
            max_ms=main["max"] / 1000,
            errors=int(main["errors"]),
            # wrk counts the completed requests only; the one in flight on each connection when a
            # run ends is still served (and its Redis commands counted).
            total=requests + int(warm["requests"]) + spec.concurrency * (2 if spec.warmup > 0 else 1),
        )


def pick_loader(cpus: set[int] | None, *, force_python: bool = False) -> Loader:
    binary = None if force_python else shutil.which("wrk")
    if binary is not None:
        return WrkLoader(cpus, binary)
    return PythonLoader(cpus)
