"""The benchmarks, run by hand from the repository's root (``python -m bench.<script>``); bench/README.md
lists them. Not shipped: the wheel holds hello_pgmem alone."""
