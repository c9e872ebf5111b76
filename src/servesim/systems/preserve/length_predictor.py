"""PreServe's request load (response-length) predictor and mu-Serve's classifier baseline (§4.2,
Table 2), on the MiniLM-L6 encoder (the DistilBERT stand-in, :mod:`.encoder`).

PreServe (``prompt_tuning``, the paper's setting): M = 20 learnable prompt vectors inserted right
after [CLS] (the paper says "appended"; [A] placement), every encoder layer frozen except the
last, the final [CLS] state -> Linear(H, 128) -> ReLU -> Linear(128, 1), L1 loss on the length
(in units of ``label_scale`` tokens), AdamW. The prompt sits at the input, so gradients flow
back through the frozen layers to it.

Early stopping (``val_fraction`` > 0 in the caller, :mod:`.table2`): after every epoch the loss is
measured on a held-out split of the training pairs (the natural length distribution, never
oversampled); training stops ``patience`` epochs after the best one, at most ``epochs``, and the
best epoch's weights are kept. ``history`` records both curves.

mu-Serve (Qiu et al. ATC'24) re-implemented on the same backbone: [CLS] -> Linear(H, 128)-ReLU-
Linear(128, 128)-ReLU-Linear(128, C)-LogSoftmax over C = 5 length buckets whose edges are the
training labels' 25/50/75/99th percentiles, NLL loss with inverse-frequency class weights; the
prediction is the predicted bucket's median training label. Training (``museve_recipe``):
``paper`` (its code's schedule: the whole encoder unfrozen at AdamW lr 1e-5 for 3 epochs, then
the encoder frozen and the head trained at lr 1e-4 for 3 more; the frozen phase reads the
[CLS] states once, in eval mode) or ``last_layer`` (PreServe's budget: the last layer and head at
PreServe's rates and epochs, no soft prompt).

``frozen`` (the quick-scale path, an ablation, labelled as such): the whole encoder is frozen,
[CLS] states are computed once and only the heads are trained (no prompt tuning).

Inputs: WordPiece ids of the prompt without special tokens, the *last* ``max_len - 2 - M``
kept (mu-Serve keeps the tail), wrapped in [CLS] ... [SEP]. Everything is seeded; ``device``
``cpu`` (the default) runs on one CPU thread, ``cuda`` on a GPU in fp32 (TF32 off) with PyTorch's
deterministic algorithms, so a seed gives the same outputs on the same GPU and software, not the
CPU path's outputs bit for bit (different kernels sum in different orders). Batches, shuffles and
the prompt's initialisation are drawn on the CPU either way.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .encoder import load_encoder
from .length_data import MAX_LABEL, LengthDataError

MODES = ("prompt_tuning", "frozen")
MUSEVE_RECIPES = ("paper", "last_layer")
POOLINGS = ("cls", "mean")
BATCHINGS = ("random", "length")
DEVICES = ("cpu", "cuda")
HEAD_WIDTH = 128  # [A] the paper gives none; mu-Serve's width


@dataclass(frozen=True)
class LengthSettings:
    mode: str = "prompt_tuning"
    n_prompt: int = 20          # M [A]
    max_len: int = 512
    epochs: int = 3
    batch_size: int = 16
    lr: float = 1e-4            # encoder layer + prompt (AdamW)
    head_lr: float = 1e-3       # the heads
    label_scale: float = 100.0  # L1 on length / label_scale (same argmin as L1 in tokens)
    museve_classes: int = 5
    museve_recipe: str = "paper"  # mu-Serve's own schedule, or "last_layer" (module docstring)
    museve_epochs: tuple[int, int] = (3, 3)        # paper recipe: unfrozen, then frozen encoder
    museve_lr: tuple[float, float] = (1e-5, 1e-4)  # paper recipe: lr of each phase
    patience: int = 2             # early stopping: epochs without a better validation loss
    pooling: str = "cls"        # the paper: the final [CLS] state; "mean": masked mean of the final states
    # how prompt-tuning batches are drawn [A]: "random" (uniform shuffles: every batch pads to its longest
    # prompt) or "length" (shuffled, then sorted by length within windows of 50 batches and the batch
    # order shuffled: the same samples per epoch with a fraction of the padding, hence of the CPU time)
    batching: str = "random"
    device: str = "cpu"           # cpu (one thread) | cuda (module docstring)
    seed: int = 0

    def __post_init__(self):
        if self.device not in DEVICES:
            raise LengthDataError(f"LengthSettings: device={self.device!r}; expected one of {DEVICES}")
        if self.mode not in MODES:
            raise LengthDataError(f"LengthSettings: mode={self.mode!r}; expected one of {MODES}")
        if self.pooling not in POOLINGS:
            raise LengthDataError(f"LengthSettings: pooling={self.pooling!r}; expected one of {POOLINGS}")
        if self.batching not in BATCHINGS:
            raise LengthDataError(f"LengthSettings: batching={self.batching!r}; expected one of {BATCHINGS}")
        if self.museve_recipe not in MUSEVE_RECIPES:
            raise LengthDataError(f"LengthSettings: museve_recipe={self.museve_recipe!r}; expected one of {MUSEVE_RECIPES}")
        if self.patience < 1 or min(self.museve_epochs) < 0 or sum(self.museve_epochs) < 1:
            raise LengthDataError(f"LengthSettings: patience={self.patience} (>= 1), museve_epochs={self.museve_epochs} "
                                  "(>= 0 each, one at least)")


def tokenize(tok, texts, max_len: int, reserve: int = 0) -> list[list[int]]:
    """[CLS] + the last (max_len - 2 - reserve) prompt ids + [SEP] for each text."""
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    keep = max_len - 2 - reserve
    if keep < 1:
        raise LengthDataError(f"tokenize: max_len={max_len} leaves no room for text after {reserve} prompt tokens")
    out = []
    for e in tok.encode_batch([str(t) for t in texts], add_special_tokens=False):
        out.append([cls] + e.ids[-keep:] + [sep])
    return out


def _pad(seqs: list[list[int]], device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    L = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), L, dtype=torch.long)
    mask = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    return ids.to(device), mask.to(device)


def use_device(device: str) -> None:
    """Set up torch for ``device``: one CPU thread, or a GPU in strict fp32 with deterministic
    kernels (cuBLAS needs its workspace setting before its first call; an op without a
    deterministic kernel warns rather than stopping a long run)."""
    if device == "cpu":
        torch.set_num_threads(1)
        return
    if not torch.cuda.is_available():
        raise LengthDataError(f"device={device!r}: torch {torch.__version__} sees no CUDA device")
    import os

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    # attention through the math kernel: the fused ones' backward passes accumulate with atomics
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.use_deterministic_algorithms(True, warn_only=True)


def pool(states: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """The sequence summary fed to the heads: the [CLS] state (paper) or the masked mean
    (all-MiniLM-L6-v2's own sentence embedding)."""
    if how == "cls":
        return states[:, 0]
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(1) / m.sum(1).clamp(min=1.0)


def regression_head(h: int) -> nn.Module:
    return nn.Sequential(nn.Linear(h, HEAD_WIDTH), nn.ReLU(), nn.Linear(HEAD_WIDTH, 1))


def museve_head(h: int, classes: int) -> nn.Module:
    return nn.Sequential(nn.Linear(h, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, classes),
                         nn.LogSoftmax(dim=-1))


class EncoderWithPrompt(nn.Module):
    """BertModel + optional soft prompt after [CLS]; returns the final [CLS] state. Trainable:
    the last encoder layer and the prompt (``trainable="last"``), or every parameter ("all")."""

    def __init__(self, encoder, n_prompt: int, seed: int, pooling: str = "cls", trainable: str = "last") -> None:
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        for p in encoder.parameters():
            p.requires_grad_(trainable == "all")
        if trainable == "last":
            for p in encoder.encoder.layer[-1].parameters():
                p.requires_grad_(True)
        self.n_prompt = int(n_prompt)
        if self.n_prompt:
            emb = encoder.embeddings.word_embeddings.weight
            g = torch.Generator().manual_seed(seed)
            # Lester et al.: initialise the prompt from sampled vocabulary embeddings (past
            # WordPiece's [unused] block when the vocabulary is that large)
            lo = 1000 if emb.shape[0] > 2000 else 0
            rows = torch.randint(lo, emb.shape[0], (self.n_prompt,), generator=g)
            self.prompt = nn.Parameter(emb[rows].detach().clone())
        else:
            self.prompt = None

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        we = self.encoder.embeddings.word_embeddings(ids)
        if self.prompt is not None:
            B = ids.shape[0]
            we = torch.cat([we[:, :1], self.prompt.unsqueeze(0).expand(B, -1, -1), we[:, 1:]], dim=1)
            mask = torch.cat([mask[:, :1], mask.new_ones(B, self.n_prompt), mask[:, 1:]], dim=1)
        return pool(self.encoder(inputs_embeds=we, attention_mask=mask).last_hidden_state, mask, self.pooling)


def museve_buckets(labels) -> tuple[np.ndarray, np.ndarray]:
    """(inner edges: the 25/50/75/99th percentiles, per-bucket median label) of training labels."""
    y = np.asarray(labels, dtype=np.float64)
    edges = np.percentile(y, [25, 50, 75, 99])
    cls = np.searchsorted(edges, y, side="right")
    med = np.array([np.median(y[cls == c]) if (cls == c).any() else np.nan for c in range(len(edges) + 1)])
    # an empty bucket (ties at an edge) predicts its nearest non-empty neighbour's median
    for c in np.flatnonzero(np.isnan(med)):
        ok = np.flatnonzero(~np.isnan(med))
        med[c] = med[ok[np.argmin(np.abs(ok - c))]]
    return edges, med


class LengthPredictor:
    """Train PreServe's regressor and mu-Serve's classifier; predict lengths for texts."""

    def __init__(self, settings: LengthSettings = LengthSettings()) -> None:
        self.s = settings
        # per epoch: training loss, and the validation loss where a held-out split was given
        self.loss_history: dict[str, list[float]] = {"preserve": [], "museve": []}
        self.val_history: dict[str, list[float]] = {"preserve": [], "museve": []}
        self.best_epoch: dict[str, int] = {}
        self.train_s: dict[str, float] = {}
        self.latency_ms: dict[str, float] = {}

    # -- shared pieces -------------------------------------------------------------------------
    def share_encoder(self, other: "LengthPredictor") -> "LengthPredictor":
        """Use ``other``'s loaded encoder (read-only: every trained model is a copy), and its cache
        of frozen states where both pool and truncate alike (a cached state is a pure function of
        the text, ``max_len`` and ``pooling``), so one run never loads or encodes the same thing
        twice. Returns self."""
        other._ensure_encoder()
        if other.s.device != self.s.device:
            raise LengthDataError(f"share_encoder: devices {other.s.device!r} and {self.s.device!r} differ")
        self._base, self.tok, self.config, self._frozen = other._base, other.tok, other.config, other._frozen
        same = (other.s.max_len, other.s.pooling) == (self.s.max_len, self.s.pooling)
        self._cache = other._cache if same else {}
        return self

    def _ensure_encoder(self):
        use_device(self.s.device)
        if not hasattr(self, "_base"):
            # _base stays on the CPU (the synonym source reads its embeddings); models are copies
            self._base, self.tok, self.config = load_encoder()
            self._frozen = self._base if self.s.device == "cpu" else copy.deepcopy(self._base).to(self.s.device)
            self._cache: dict[str, torch.Tensor] = {}

    def _batches(self, n: int, gen: torch.Generator, lengths=None):
        """Index batches of one epoch (``batching``; ``lengths`` given only on the prompt-tuning path)."""
        B = self.s.batch_size
        perm = torch.randperm(n, generator=gen)
        if self.s.batching == "random" or lengths is None:
            for i in range(0, n, B):
                yield perm[i:i + B]
            return
        lengths = torch.as_tensor(lengths)
        window = 50 * B
        batches = []
        for i in range(0, n, window):
            w = perm[i:i + window]
            w = w[torch.argsort(lengths[w], stable=True)]
            batches += [w[j:j + B] for j in range(0, w.numel(), B)]
        for k in torch.randperm(len(batches), generator=gen).tolist():
            yield batches[k]

    def encode_cls(self, texts) -> torch.Tensor:
        """Pooled final states of the frozen pretrained encoder (the ``frozen`` path), cached per text
        (on the CPU, whatever the device)."""
        self._ensure_encoder()
        todo = list(dict.fromkeys(t for t in map(str, texts) if t not in self._cache))
        seqs = tokenize(self.tok, todo, self.s.max_len)
        with torch.no_grad():
            for i in range(0, len(seqs), 32):
                ids, mask = _pad(seqs[i:i + 32], self.s.device)
                h = pool(self._frozen(input_ids=ids, attention_mask=mask).last_hidden_state, mask, self.s.pooling)
                for t, v in zip(todo[i:i + 32], h.cpu()):
                    self._cache[t] = v
        if not len(texts):
            return torch.zeros(0, self.config.hidden_size)
        return torch.stack([self._cache[str(t)] for t in texts])

    # -- training ------------------------------------------------------------------------------
    def fit(self, texts, labels, which: str = "preserve", val_texts=None, val_labels=None) -> "LengthPredictor":
        """Train ``which`` (``preserve`` or ``museve``) on (texts, labels); with a validation split
        (``val_texts``, ``val_labels``) PreServe stops early and keeps its best epoch (module
        docstring), and both record the validation loss per epoch."""
        y = np.asarray(labels, dtype=np.float64)
        if len(texts) != y.size or y.size == 0:
            raise LengthDataError(f"LengthPredictor.fit: {len(texts)} texts vs {y.size} labels")
        if which not in ("preserve", "museve"):
            raise LengthDataError(f"LengthPredictor.fit: which={which!r}; expected preserve|museve")
        val = val_texts is not None and len(val_texts) > 0
        if val and len(val_texts) != len(val_labels):
            raise LengthDataError(f"LengthPredictor.fit: {len(val_texts)} validation texts vs {len(val_labels)} labels")
        self._ensure_encoder()
        H = self.config.hidden_size
        torch.manual_seed(self.s.seed)
        gen = torch.Generator().manual_seed(self.s.seed)
        if which == "preserve":
            head, loss_fn, n_prompt = regression_head(H).to(self.s.device), nn.L1Loss(), self.s.n_prompt
            self.reg_head = head
        else:
            self.edges, self.medians = museve_buckets(y)
            counts = torch.bincount(self._target(which, y), minlength=len(self.medians)).to(torch.float32)
            w = torch.where(counts > 0, counts.sum() / (len(counts) * counts.clamp(min=1)), torch.zeros_like(counts))
            head = museve_head(H, len(self.medians)).to(self.s.device)
            loss_fn, n_prompt = nn.NLLLoss(weight=w.to(self.s.device)), 0
            self.cls_head = head
        tgt = self._target(which, y)
        vtgt = self._target(which, np.asarray(val_labels, dtype=np.float64)) if val else None
        t0 = time.perf_counter()
        self.loss_history[which], self.val_history[which] = [], []
        self.best_epoch.pop(which, None)
        if self.s.mode == "frozen":
            self._fit_heads(head, loss_fn, which, self.encode_cls(texts), tgt,
                            self.encode_cls(val_texts) if val else None, vtgt, self.s.head_lr, self.s.epochs, gen)
        elif which == "museve" and self.s.museve_recipe == "paper":
            # mu-Serve's schedule: the whole encoder at lr 1e-5, then the encoder frozen, the head at 1e-4
            e1, e2 = self.s.museve_epochs
            model = self._model(0, "all")
            seqs = tokenize(self.tok, texts, self.s.max_len, 0)
            vseqs = tokenize(self.tok, val_texts, self.s.max_len, 0) if val else None
            opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=self.s.museve_lr[0])
            self._train_encoder(model, head, loss_fn, which, opt, seqs, tgt, vseqs, vtgt, e1, gen, early_stop=False)
            model.eval()
            if e2:
                self._fit_heads(head, loss_fn, which, self._encode(model, seqs), tgt,
                                self._encode(model, vseqs) if val else None, vtgt, self.s.museve_lr[1], e2, gen)
            self._museve_model = model
        else:
            # the paper's path: soft prompt + last layer + head (PreServe); last layer + head (mu-Serve)
            model = self._model(n_prompt, "last")
            seqs = tokenize(self.tok, texts, self.s.max_len, n_prompt)
            vseqs = tokenize(self.tok, val_texts, self.s.max_len, n_prompt) if val else None
            enc_params = [p for p in model.parameters() if p.requires_grad]
            opt = torch.optim.AdamW([{"params": enc_params, "lr": self.s.lr},
                                     {"params": head.parameters(), "lr": self.s.head_lr}])
            self._train_encoder(model, head, loss_fn, which, opt, seqs, tgt, vseqs, vtgt, self.s.epochs, gen,
                                early_stop=which == "preserve")
            model.eval()
            setattr(self, f"_{which}_model", model)
        self.train_s[which] = time.perf_counter() - t0
        return self

    def _target(self, which: str, y: np.ndarray) -> torch.Tensor:
        """Training targets on the CPU (batches index them there; ``_loss`` moves each batch)."""
        if which == "preserve":
            return torch.tensor(y / self.s.label_scale, dtype=torch.float32)
        return torch.tensor(np.searchsorted(self.edges, y, side="right"), dtype=torch.long)

    @staticmethod
    def _loss(head, loss_fn, which, states, tgt):
        out = head(states)
        tgt = tgt.to(states.device)
        return loss_fn(out.squeeze(-1) if which == "preserve" else out, tgt)

    def _model(self, n_prompt: int, trainable: str) -> EncoderWithPrompt:
        # the prompt is initialised on the CPU copy, then the whole model moves
        return EncoderWithPrompt(copy.deepcopy(self._base), n_prompt, self.s.seed, self.s.pooling,
                                 trainable).to(self.s.device)

    def _encode(self, model, seqs) -> torch.Tensor:
        """Pooled states of ``seqs`` through ``model`` in eval mode (length order, callers' order back)."""
        model.eval()
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        out = []
        with torch.no_grad():
            for i in range(0, len(seqs), 32):
                out.append(model(*_pad([seqs[j] for j in order[i:i + 32]], self.s.device)))
        if not out:
            return torch.zeros(0, self.config.hidden_size, device=self.s.device)
        return torch.cat(out)[torch.argsort(torch.tensor(order)).to(self.s.device)]

    def _fit_heads(self, head, loss_fn, which, feats, tgt, vfeats, vtgt, lr, epochs, gen) -> None:
        """Train the head alone on fixed encoder states (one training and validation loss per epoch)."""
        feats = feats.to(self.s.device)
        vfeats = vfeats.to(self.s.device) if vfeats is not None else None
        opt = torch.optim.AdamW(head.parameters(), lr=lr)
        for _ in range(epochs):
            head.train()
            tot = 0.0
            for b in self._batches(len(tgt), gen):
                opt.zero_grad()
                loss = self._loss(head, loss_fn, which, feats[b.to(feats.device)], tgt[b])
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * b.numel()
            self.loss_history[which].append(tot / len(tgt))
            if vfeats is not None:
                head.eval()
                with torch.no_grad():
                    self.val_history[which].append(float(self._loss(head, loss_fn, which, vfeats, vtgt)))
        head.eval()

    def _train_encoder(self, model, head, loss_fn, which, opt, seqs, tgt, vseqs, vtgt, epochs, gen,
                       early_stop: bool) -> None:
        """Epochs of encoder (+ prompt) + head training on token sequences; with a validation split
        and ``early_stop``, stop ``patience`` epochs after the best validation loss and restore it."""
        best, best_state = float("inf"), None
        for epoch in range(epochs):
            model.train()
            head.train()
            tot = 0.0
            for b in self._batches(len(tgt), gen, [len(q) for q in seqs]):
                ids, mask = _pad([seqs[int(i)] for i in b], self.s.device)
                opt.zero_grad()
                loss = self._loss(head, loss_fn, which, model(ids, mask), tgt[b])
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * b.numel()
            self.loss_history[which].append(tot / len(tgt))
            if vseqs is None:
                continue
            head.eval()
            with torch.no_grad():
                v = float(self._loss(head, loss_fn, which, self._encode(model, vseqs), vtgt))
            self.val_history[which].append(v)
            if not early_stop:
                continue
            if v < best:
                best, self.best_epoch[which] = v, epoch
                best_state = (copy.deepcopy(model.state_dict()), copy.deepcopy(head.state_dict()))
            elif epoch - self.best_epoch[which] >= self.s.patience:
                break
        if best_state is not None:
            model.load_state_dict(best_state[0])
            head.load_state_dict(best_state[1])

    # -- prediction ----------------------------------------------------------------------------
    def _states(self, name: str, texts) -> torch.Tensor:
        if self.s.mode == "frozen":
            return self.encode_cls(texts)
        model = getattr(self, f"_{name}_model")
        # encoded in length order (little padding), returned in the callers' order
        return self._encode(model, tokenize(self.tok, texts, self.s.max_len, model.n_prompt))

    def predict(self, texts, which: str = "preserve") -> np.ndarray:
        """Predicted lengths in tokens: PreServe's regression clipped to [1, 4096], or mu-Serve's
        bucket median. Sets ``latency_ms[which]`` (mean wall time per text, encoding included
        unless the frozen path's cache already holds the text)."""
        use_device(self.s.device)
        t0 = time.perf_counter()
        with torch.no_grad():
            h = self._states(which, texts).to(self.s.device)
            if which == "preserve":
                out = np.clip(self.reg_head(h).squeeze(-1).cpu().numpy().astype(np.float64) * self.s.label_scale,
                              1.0, MAX_LABEL)
            else:
                out = self.medians[self.cls_head(h).argmax(-1).cpu().numpy()]
        self.latency_ms[which] = (time.perf_counter() - t0) * 1e3 / max(len(texts), 1)
        return out


def length_metrics(actual, predicted) -> dict[str, float]:
    """Table 2's metrics: MAE (tokens) and Acc-k = % of predictions within k tokens (k = 25, 50, 100)."""
    a = np.asarray(actual, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if a.shape != p.shape or a.size == 0:
        raise LengthDataError(f"length_metrics: shapes {a.shape} vs {p.shape}")
    err = np.abs(p - a)
    return {"mae": float(err.mean()), **{f"acc{k}_pct": float(100.0 * np.mean(err <= k)) for k in (25, 50, 100)}}
