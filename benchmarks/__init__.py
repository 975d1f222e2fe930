"""Scripts that print measured tables (run them as `python -m benchmarks.<name>`)."""
