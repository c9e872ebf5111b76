"""The README's SageServe readings table: generated from a snapshot's sensitivity data."""

import numpy as np
import pandas as pd

from servesim.analysis import readings_doc
from servesim.systems.sageserve.sensitivity import own_theta, readings_table


def _data():
    rows = []
    for reading, headrooms in (("paper", [0.5, 1.0]), ("code", [np.nan])):
        rows.append({"reading": reading, "strategy": "reactive", "headroom": np.nan, "x_headroom": np.nan,
                     "savings_pct": np.nan, "ttft_p95_ratio": np.nan})
        for h in headrooms:
            for st, sav, ratio in (("lt_i", 21.0, 0.9), ("lt_ua", 30.0, 1.2)):
                rows.append({"reading": reading, "strategy": st, "headroom": h, "x_headroom": 0.91 if np.isnan(h) else h,
                             "savings_pct": sav + (0 if h == 1.0 or np.isnan(h) else -15), "savings_pct_exact": sav / 2,
                             "savings_pct_sum_of_region_maxima": sav + 1, "ttft_p95_ratio": ratio})
    return pd.DataFrame(rows)


def test_own_theta_is_the_fixed_theta_else_headroom_one():
    d = _data()
    assert own_theta(d[(d.reading == "paper") & (d.strategy == "lt_i")])["headroom"] == 1.0
    assert np.isnan(own_theta(d[(d.reading == "code") & (d.strategy == "lt_i")])["headroom"])
    assert own_theta(d[(d.reading == "paper") & (d.headroom == 0.5) & (d.strategy == "lt_i")]) is None


def test_table_marks_range_and_latency(tmp_path):
    d = _data()
    t = readings_table(d[d.strategy != "reactive"]).set_index(["reading", "strategy"])
    assert t.loc[("paper", "lt_i"), "paper_range_and_ttft_ok"]            # 21 % and TTFT 0.9x
    assert not t.loc[("paper", "lt_ua"), "paper_range_and_ttft_ok"]       # 30 %: above the range
    assert t.loc[("code", "lt_i"), "theta"] == "fixed"
    (tmp_path / readings_doc.DATA).parent.mkdir(parents=True)
    d.to_csv(tmp_path / readings_doc.DATA, index=False)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{readings_doc.BEGIN}\nold\n{readings_doc.END}\n\ntail\n")
    assert readings_doc.update(readme, tmp_path, "0123456789abc")
    text = readme.read_text()
    assert "old" not in text and text.endswith("tail\n") and "at 0123456789" in text
    assert "| `paper` | LT-I | 1.00 | 21.0 % | 22.0 % | 10.5 % | 0.90 | ✓ |" in text
    # no SageServe part in the snapshot: the block says so instead of a table
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no SageServe part yet" in readings_doc.section(empty)
    readme.write_text("no markers\n")
    assert not readings_doc.update(readme, tmp_path)


def test_forecast_rows_come_from_the_figures_metrics(tmp_path):
    """With Figs 11 and 13a's metrics in the snapshot (ARIMA and oracle runs), the block adds one row
    per (forecast, LT strategy) from them; without the oracle keys it adds none."""
    import json

    d = _data()
    (tmp_path / readings_doc.DATA).parent.mkdir(parents=True)
    d.to_csv(tmp_path / readings_doc.DATA, index=False)
    assert "The forecast as a reading" not in readings_doc.section(tmp_path)
    sav, lat = {"model": "llama-2-70b"}, {}
    for k, (a, e, t) in {"lt_i": (40.0, 22.3, 1.28), "lt_u": (38.6, 19.5, 1.2), "lt_ua": (39.0, 19.9, 1.21),
                         "lt_i_oracle": (28.3, 6.2, 0.7), "lt_u_oracle": (28.5, 5.9, 0.71),
                         "lt_ua_oracle": (27.9, 6.4, 0.71)}.items():
        sav |= {f"savings_pct_{k}": a, f"savings_pct_exact_{k}": e}
        lat |= {f"ttft_p75_ratio_{k}_vs_reactive": t, f"e2e_p75_ratio_{k}_vs_reactive": t - 0.1}
    for key, m in (("savings", sav), ("latency", lat)):
        (tmp_path / readings_doc.FORECAST[key]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / readings_doc.FORECAST[key]).write_text(json.dumps(m))
    text = readings_doc.section(tmp_path)
    assert "| ARIMA (the paper's) | LT-U | 38.6 % | 19.5 % | 1.20 | 1.10 |" in text
    assert "| `oracle` | LT-UA | 27.9 % | 6.4 % | 0.71 | 0.61 |" in text
    assert text.index("The forecast as a reading") < text.index(readings_doc.END)
    assert "`code`" not in text[text.index("The forecast as a reading"):]  # no code runs here: no code rows
    for k, (a, e, t) in {"lt_i_code": (30.1, 14.2, 0.79), "lt_u_code": (23.2, 10.2, 0.73),
                         "lt_ua_code": (18.4, 6.0, 0.72)}.items():
        sav |= {f"savings_pct_{k}": a, f"savings_pct_exact_{k}": e}
        lat |= {f"ttft_p75_ratio_{k}_vs_reactive": t, f"e2e_p75_ratio_{k}_vs_reactive": t - 0.1}
    for key, m in (("savings", sav), ("latency", lat)):
        (tmp_path / readings_doc.FORECAST[key]).write_text(json.dumps(m))
    text = readings_doc.section(tmp_path)
    assert "| `code` | LT-UA | 18.4 % | 6.0 % | 0.72 | 0.62 |" in text and "`code`: the authors' code's settings" in text
    del lat["ttft_p75_ratio_lt_u_oracle_vs_reactive"]  # a snapshot made before the oracle runs
    (tmp_path / readings_doc.FORECAST["latency"]).write_text(json.dumps(lat))
    assert "The forecast as a reading" not in readings_doc.section(tmp_path)


def test_claim_readings_line_names_the_claims_a_reading_turns(tmp_path):
    import csv

    from servesim.analysis.claims import REPORT_COLUMNS

    rows = [("sageserve-02f-a", "FAIL", "oracle: 28.3 (PASS)"), ("sageserve-06a-b", "WEAK", "oracle: 0.7 (FAIL)"),
            ("sageserve-17q-c", "FAIL", "oracle: [3, 4] (FAIL)"), ("sageserve-09a-d", "PASS", ""),
            ("aegaeon-06a-e", "FAIL", "oracle: 1 (PASS)")]
    with open(tmp_path / "claims_report.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=REPORT_COLUMNS)
        w.writeheader()
        for i, st, rd in rows:
            w.writerow({**{k: "" for k in REPORT_COLUMNS}, "id": i, "paper": i.split("-")[0], "kind": "measured",
                        "status": st, "readings": rd})
    [line] = [x for x in readings_doc._claim_readings(tmp_path) if x]
    assert "under `oracle`" in line and "3 SageServe claims declare it" in line
    assert "passes 1 that FAIL by default (02f)" in line and "fails 1 that hold by default (06a)" in line
