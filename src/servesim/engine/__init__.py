"""servesim.engine: the real path.

Start ``vllm serve`` configured like a simulated instance (:mod:`.server`), replay a workload
at its arrival times with a streaming HTTP client (:mod:`.client`, :mod:`.replay`), record
per-request and per-token times in the simulator's result schema (:mod:`.records`), profile
step times and fit step-time models (:mod:`.profile`), and compare with the simulator
(:mod:`.compare`). :mod:`.tiny_model` builds a random-weight model for runs without downloads.
"""
