"""Side-by-side benchmarks, run as `python -m bench.X` from the repository
root (index: bench/README.md; results: BENCHMARKS.md). Never imported by
keras_bert, pipelines or the tests."""
