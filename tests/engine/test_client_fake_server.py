"""The streaming replay client against a tiny local fake of the completions endpoint.

(The real engine is exercised in test_vllm_real.py; this fake only drives the client's
recording and failure paths deterministically.)
"""

import asyncio
import json

import numpy as np

from servesim.engine.client import ReplayOptions, prompt_ids, replay_async
from servesim.engine.records import check_request_table, request_table, token_table
from servesim.workload import schema


class FakeServer:
    """HTTP/1.1 server: /v1/completions streams max_tokens tokens as SSE, per ``behaviour``."""

    def __init__(self, behaviour="ok", gap_s=0.002, chunk=1):
        self.behaviour, self.gap_s, self.chunk = behaviour, gap_s, chunk
        self.bodies = []

    async def handle(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int([ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")][0])
            body = json.loads(await reader.readexactly(length))
            self.bodies.append(body)
            if self.behaviour == "reject":
                msg = b'{"error": {"message": "prompt too long"}}'
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(msg)).encode() + b"\r\nConnection: close\r\n\r\n" + msg)
                await writer.drain()
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            n = body["max_tokens"]
            sent = 0
            while sent < n:
                if self.behaviour == "crash" and sent >= n // 2:
                    writer.transport.abort()  # connection dies mid-stream
                    return
                if self.behaviour == "stall" and sent >= 1:
                    await asyncio.sleep(3600)
                k = min(self.chunk, n - sent)
                sent += k
                ch = {"text": " t5" * k, "token_ids": [5] * k, "finish_reason": "length" if sent == n else None}
                writer.write(b"data: " + json.dumps({"choices": [ch]}).encode() + b"\n\n")
                await writer.drain()
                await asyncio.sleep(self.gap_s)
            writer.write(b"data: [DONE]\n\n")
            await writer.drain()
        finally:
            writer.close()

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc):
        self.server.close()


def _wl(n=4, out=5):
    return schema.make(np.arange(n) * 0.01, np.arange(n) + 3, np.full(n, out))


def _run(behaviour, wl, opts=ReplayOptions(), **kw):
    async def go():
        async with FakeServer(behaviour, **kw) as srv:
            recs = await replay_async(srv.url, wl, opts)
            return recs, srv.bodies
    return asyncio.run(go())


def test_streams_are_recorded_token_by_token():
    wl = _wl()
    recs, bodies = _run("ok", wl, chunk=2)  # chunks of 2 tokens still count as 2 tokens
    df = request_table(wl, recs)
    check_request_table(df, wl)
    assert (df.state == "finished").all() and not df.partial.any()
    tt = token_table(recs)
    assert tt.groupby("request_id").size().tolist() == [5] * 4
    for _, g in tt.groupby("request_id"):
        assert np.all(np.diff(g.time_s.to_numpy()) >= 0)
    assert (df.first_token_s >= df.arrival_s).all()
    # the request body asks for exactly the workload's lengths
    b = sorted(bodies, key=lambda b: len(b["prompt"]))
    assert [len(x["prompt"]) for x in b] == [3, 4, 5, 6]
    assert all(x["max_tokens"] == x["min_tokens"] == 5 and x["ignore_eos"] and x["stream"] for x in b)


def test_prompt_ids_are_deterministic_and_in_vocab():
    o = ReplayOptions(vocab_size=50, first_token_id=3, seed=7)
    a, b = prompt_ids(11, 100, o), prompt_ids(11, 100, o)
    assert a == b and len(a) == 100 and min(a) >= 3 and max(a) < 50
    assert prompt_ids(12, 100, o) != a


def test_rejection_is_recorded():
    recs, _ = _run("reject", _wl(2))
    df = request_table(_wl(2), recs)
    assert (df.state == "rejected").all() and df.reason.str.contains("400").all()


def test_connection_lost_mid_stream_keeps_partial_tokens():
    wl = _wl(2, out=6)
    recs, _ = _run("crash", wl)
    df = request_table(wl, recs)
    assert (df.state == "error").all() and df.partial.all()
    assert token_table(recs).groupby("request_id").size().tolist() == [3, 3]


def test_timeout_keeps_partial_tokens():
    wl = _wl(2)
    recs, _ = _run("stall", wl, ReplayOptions(request_timeout_s=0.3))
    df = request_table(wl, recs)
    assert (df.state == "timeout").all() and df.partial.all()
    assert (token_table(recs).groupby("request_id").size() == 1).all()


def test_dead_server_stops_the_replay_and_marks_the_rest():
    wl = schema.make(np.array([0.0, 30.0]), [3, 3], [5, 5])  # the second request would wait 30 s

    async def go():
        async with FakeServer("ok") as srv:
            calls = {"n": 0}

            def alive():
                calls["n"] += 1
                return calls["n"] < 3
            return await replay_async(srv.url, wl, ReplayOptions(), alive=alive)
    recs = asyncio.run(go())
    df = request_table(wl, recs)
    assert df.state.tolist() == ["finished", "error"]
    assert df.partial.tolist() == [False, True] and "server process exited" in df.reason.iloc[1]
