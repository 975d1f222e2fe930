"""Charts of a run's economics, drawn from its usage log: where the prompt tokens went, and the $.

    python -m agent.ext.charts.chart usage.jsonl [--png run.png]

Why here and not in the core: a run needs no chart, and plotting is an optional extra
(`pip install -e ".[plot]"`). It needs no hook either: the core already writes the usage
log (`Agent(usage_log=...)`), so this package only reads files, and it is not an
`Extension`. The functions are in `agent.ext.charts.chart` (`read_usage_log`, `series`,
`terminal`, `write_png`, `compare_png`); this file imports nothing, so `python -m` runs
that module cleanly and `import agent.ext.charts` costs nothing.
"""

__all__: list[str] = []
