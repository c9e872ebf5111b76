"""Paper-vs-ours tables: relative differences and the rendered figure."""

import math

import matplotlib

matplotlib.use("Agg")

from servesim.analysis.comparison import comparison, table_figure


def test_rel_diff_and_non_numbers():
    df = comparison([
        {"quantity": "a", "metric": "a", "paper": 4, "ours": 5, "how": ""},
        {"quantity": "b", "metric": "b", "paper": "0.1-0.2", "ours": 0.15, "how": ""},
        {"quantity": "c", "metric": "c", "paper": 0, "ours": 1, "how": ""},
        {"quantity": "d", "metric": "d", "paper": 7, "ours": None, "how": "NR"},
    ])
    assert df.rel_diff[0] == 0.25
    assert all(math.isnan(v) for v in df.rel_diff[1:])


def test_table_figure_has_one_row_per_entry():
    df = comparison([{"quantity": "a", "metric": "a", "paper": 1, "ours": True, "how": "x"}])
    fig = table_figure(df, "t")
    tab = fig.axes[0].tables[0]
    assert len({r for r, _ in tab.get_celld()}) == 2   # header + one row
