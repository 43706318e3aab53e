"""Sub-commands of the `harness` command line, one module per command group; `harness.cli`
registers them."""
