"""The query-time BLAS cap (retrieval/threads.py) takes effect in the process that calls it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap


def _blas_threads_after(code: str, env_value: str | None) -> list[int]:
    env = dict(os.environ)
    env.pop("VECTREE_BLAS_THREADS", None)
    env["OPENBLAS_NUM_THREADS"] = "2"  # the pool starts at 2 threads however many cores CI has
    if env_value is not None:
        env["VECTREE_BLAS_THREADS"] = env_value
    script = textwrap.dedent(f"""
        from threadpoolctl import threadpool_info
        {code}
        print([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_limit_caps_blas_at_one_thread_by_default():
    code = "from retrieval.threads import limit_blas_threads; limit_blas_threads()"
    threads = _blas_threads_after(code, None)
    assert threads and all(n == 1 for n in threads)


def test_limit_follows_the_environment_and_zero_leaves_blas_alone():
    untouched = _blas_threads_after("import numpy", None)
    assert untouched and all(n == 2 for n in untouched)
    call = "import numpy; from retrieval.threads import limit_blas_threads; limit_blas_threads()"
    assert _blas_threads_after(call, "0") == untouched
    assert all(n == 1 for n in _blas_threads_after(call, "1"))


def test_the_service_applies_it():
    code = ("import tempfile; from service.http import create_app; "
            "create_app(tempfile.mkdtemp())")
    threads = _blas_threads_after(code, None)
    assert threads and all(n == 1 for n in threads)
