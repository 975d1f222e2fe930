"""The fallback compressor's parts, one module per kind of tool output.

`agent.context.compress.compress` detects the kind and calls one of these; each
takes (content, budget, pointer) and returns text of at most `budget` characters
that says what it cut and where the full result is.
"""
