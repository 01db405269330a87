"""The run pages: one module per tab (overview, agents, stores, divergences, refusals, arms), each
holding its view beside its selectors; `common` the frame and the reads they share, `run_selectors`
the run-level reads, `report` the JSON report built from the tabs' selectors."""
