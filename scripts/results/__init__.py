"""The results of GPU sessions, and the tables the docs print from them (scripts/results.py).

One concept a file: source (a results folder or a session's tarball; the sessions' JSON files),
lines (the pools' stats and graphs lines), stats (the paired bootstrap and the place
adjustment), rounds (llama-bench rounds: reading, placing, pooling sessions), split (a rotating
round split by configuration), markdown and blocks (tables, and the generated blocks of the
docs); a table family a file (speed, speculative, pressure, runs, benchmarks, text); registry
(every table by name, the sessions each reads) and summary (the tables of one results folder).
"""
