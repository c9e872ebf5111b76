"""A reference for Table 2 that asks the data, not the paper: does a prompt's text say anything
about its response length at the pairs and tokens a scale trains on?

``knn_predict``: the median length of the k training prompts most similar to a test prompt, by
cosine similarity of MiniLM-L6's mean-pooled sentence embeddings (all-MiniLM-L6-v2 was trained for
exactly that similarity), k chosen by leave-one-out MAE on the training pairs alone (``choose_k``) (the test split
is never read to choose it). No weights are trained, so it cannot under-train: where it beats the
training median and PreServe's predictor does not, the prompts carry length signal that PreServe's
training did not take up; where it ties the median too, the data at that size carry none. It is
not a paper method and no claim is judged on it; claims' diagnoses cite it.
"""

from __future__ import annotations

import numpy as np

from .length_data import LengthDataError

K_GRID = (5, 10, 25, 50, 100, 200)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _neighbours(sim: np.ndarray, k: int) -> np.ndarray:
    """Indices of each row's k most similar columns; ties broken by the lower index (stable)."""
    return np.argsort(-sim, axis=1, kind="stable")[:, :k]


def knn_predict(train_emb, train_labels, test_emb, k: int) -> np.ndarray:
    """Median training label of each test row's ``k`` nearest training rows (cosine)."""
    y = np.asarray(train_labels, dtype=np.float64)
    a, b = _unit(train_emb), _unit(test_emb)
    if a.shape[0] != y.size or a.shape[1] != b.shape[1]:
        raise LengthDataError(f"knn_predict: {a.shape} training embeddings, {y.size} labels, {b.shape} test embeddings")
    if not 1 <= k <= y.size:
        raise LengthDataError(f"knn_predict: k={k} must be in [1, {y.size}] (the training pairs)")
    return np.median(y[_neighbours(b @ a.T, k)], axis=1)


def choose_k(train_emb, train_labels, grid=K_GRID) -> tuple[int, dict[int, float]]:
    """k of ``grid`` with the lowest leave-one-out MAE on the training pairs (ties: the smaller k),
    and the MAE of every k tried."""
    y = np.asarray(train_labels, dtype=np.float64)
    a = _unit(train_emb)
    sim = a @ a.T
    np.fill_diagonal(sim, -np.inf)  # a pair is never its own neighbour
    ks = [k for k in grid if k <= y.size - 1]
    if not ks:
        raise LengthDataError(f"choose_k: {y.size} training pairs leave no k of {tuple(grid)}")
    order = _neighbours(sim, max(ks))
    loo = {k: float(np.mean(np.abs(np.median(y[order[:, :k]], axis=1) - y))) for k in ks}
    return min(ks, key=lambda k: (loo[k], k)), loo
