"""The context economy: what goes into each request, and how little of it there can be."""
