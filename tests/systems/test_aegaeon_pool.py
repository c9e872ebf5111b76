"""End-to-end Aegaeon pool and baselines on the measured H800 profiles: determinism, request and KV
conservation, per-token timestamps, the command line. Also the profile reader's decode filter."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.data_marks import aegaeon_market, needs_aegaeon_profiles


needs_profiles = needs_aegaeon_profiles


def workload(n_models=8, rate=0.2, duration=30.0, seed=3):
    return aegaeon_market(n_models, rate, duration, seed)


@needs_profiles
@pytest.mark.parametrize("system", ["aegaeon", "sllm", "sllm_plus"])
def test_deterministic_and_conserving(system):
    from servesim.systems.aegaeon import Settings, simulate

    wl = workload()
    a = simulate(system, wl, Settings())
    b = simulate(system, wl, Settings())
    ta, tb = a.requests, b.requests
    pd.testing.assert_frame_equal(ta.drop(columns="token_times"), tb.drop(columns="token_times"))
    assert all(np.array_equal(x, y) for x, y in zip(ta.token_times, tb.token_times))
    # every request once; finished ones have all their tokens, in order, the first after arrival
    assert sorted(ta.request_id) == sorted(wl.request_id)
    ok = ~ta.failed
    assert (ta.tokens_out[ok] == ta.output_tokens[ok]).all()
    for arr, ts in zip(ta.arrival_s[ok], ta.token_times[ok]):
        assert ts[0] > arr and np.all(np.diff(ts) >= 0)
    if system == "aegaeon":
        assert not ta.failed.any()
        # every KV byte copied to the host comes back: each swap-out is followed by a swap-in
        assert a.stats["kv_d2h_s"] == pytest.approx(a.stats["kv_h2d_s"])
        assert (ta.kv_transfer_s > 0).all()


@needs_profiles
def test_models_split_by_parity_and_switches_logged():
    from servesim.systems.aegaeon import Settings, simulate

    res = simulate("aegaeon", workload(), Settings())
    t = res.requests
    idx = t.model.str.extract(r"(\d+)$")[0].astype(int)
    assert (t.node == idx % 2).all()
    sw = res.switches
    assert len(sw) > 0 and (sw.latency_s >= Settings().min_switch_s).all()
    assert (sw.latency_s <= sw.full_load_s + 1e-12).all()
    single = simulate("aegaeon", workload(), Settings(layout="single"))
    assert (single.requests.node == 0).all()


@needs_profiles
def test_command_line_writes_requests_and_summary(tmp_path):
    from servesim.systems.aegaeon.run import main

    wl = workload(n_models=4, duration=10.0)
    src = tmp_path / "w.csv"
    clock = [f"00:{int(t // 60):02d}:{t % 60:06.3f}" for t in wl.arrival_s]
    pd.DataFrame({"Request Time": clock, "Model Name": [f"synth_model_{m[-2:]}" for m in wl.model.astype(str)],
                  "Input Length": wl.prompt_tokens, "Output Length": wl.output_tokens}).to_csv(src, index=False)
    assert main(["--system", "sllm", "--workload", str(src), "-o", str(tmp_path / "o"),
                 "--set", "group_rule=artifact", "--slo-scale", "0.5"]) == 0
    summ = json.loads((tmp_path / "o" / "summary.json").read_text())
    paper = summ["paper"]
    assert paper["n_requests"] == len(wl) and paper["settings"]["tbt_s"] == pytest.approx(0.05)
    assert 0 <= paper["attainment_pct"] <= 100
    # the standard layout (servesim.metrics.summarize), SLO = the run's scaled targets
    assert summ["schema_version"] == 1 and summ["all"]["requests"] == len(wl)
    assert summ["slo"]["ttft_s"] == pytest.approx(5.0) and summ["slo"]["tpot_s"] == pytest.approx(0.05)
    assert summ["all"]["failed"] == paper["n_failed"] and summ["token_times"] == "recorded"
    req = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    assert len(req) == len(wl) and {"token_times", "attain_ae", "attain_token"} <= set(req.columns)
    from servesim.sim.request_log import REQUEST_COLUMNS
    assert list(req.columns[:len(REQUEST_COLUMNS)]) == list(REQUEST_COLUMNS)
    with pytest.raises(SystemExit, match="unknown setting"):
        main(["--system", "sllm", "--workload", str(src), "-o", str(tmp_path / "o"), "--set", "nope=1"])


def test_settings_reject_unknown_readings():
    from servesim.systems.aegaeon import Settings

    with pytest.raises(ValueError, match="group_rule"):
        Settings(group_rule="fifo")
    with pytest.raises(ValueError, match="kv_size"):
        Settings().with_(kv_size="mla")


@needs_profiles
def test_kv_size_readings():
    from servesim.systems.aegaeon.models import costs
    from servesim.systems.aegaeon import Settings

    assert costs("qwen2.5-7b", Settings()).kv_bytes_per_token == 2 * 28 * 4 * 128 * 2  # GQA: 56 KiB
    assert costs("qwen2.5-7b", Settings(kv_size="ae")).kv_bytes_per_token == 4 * 28 * 3584  # the artifact's


@needs_profiles
@pytest.mark.parametrize("prof", ["qwen2_5_7b", "yi1_5_9b_chat", "llama2_13b_chat"])
def test_profile_reader_drops_decode_rows_with_a_capped_prefill(prof):
    from servesim.perf import sources

    kept = sources.aegaeon(prof, "H800")
    flagged = sources.aegaeon(prof, "H800", long_decode="flag")
    dec = kept[kept.decode_seqs > 0]
    L = dec.decode_ctx / dec.decode_seqs
    assert (L * dec.decode_seqs <= 4096).all() and not kept.capped_prefill.any()
    fdec = flagged[flagged.decode_seqs > 0]
    cap = fdec[fdec.capped_prefill]
    assert len(cap) > 0 and len(fdec) == len(dec) + len(cap)
    assert (cap.decode_ctx > 4096).all()  # L * B > 4096 prompt tokens in the batch
    with pytest.raises(ValueError, match="long_decode"):
        sources.aegaeon(prof, "H800", long_decode="keep-all")


@needs_profiles
def test_checkpoint_mapping_is_a_setting():
    from servesim.systems.aegaeon import Settings, simulate

    s = Settings(checkpoints=("llama-2-13b",))
    res = simulate("aegaeon", workload(n_models=4, duration=10.0), s)
    assert (res.requests.checkpoint == "llama-2-13b").all()
    assert (res.switches.checkpoint == "llama-2-13b").all()


@needs_profiles
def test_host_kv_blocks_are_all_returned():
    from servesim.systems.aegaeon import Settings
    from servesim.systems.aegaeon.pool import AegaeonPool
    from servesim.systems.aegaeon.request import from_workload
    from servesim.systems.aegaeon.simulate import _fragmentation

    p = AegaeonPool(Settings(move_period_s=0.0))
    res = p.run(from_workload(workload()))
    # every request ends on a decode GPU: no KV is left on the host, every slab was reclaimed
    assert all(h.held == {} and h.slabs == {} for h in p.host)
    assert res.stats["host_cache_overflow_blocks"] == 0
    assert 0 <= _fragmentation(res.stats["host_cache"]) < 100
