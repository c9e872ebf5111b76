"""PreServe (arXiv 2504.03702): settings and stated inputs."""

from .config import PreServeConfig, paper_inputs

__all__ = ["PreServeConfig", "paper_inputs"]
