"""Looking back and asking "what if": the computations behind ``quotatop report`` and
``quotatop whatif`` (docs/review.md). No I/O here: the commands gather the data
(sacct, a recording, a scenario) and print; these modules only compute.

Its floor (docs/architecture.md) is below the TUI, which shows a report and a what-if, and
above the rooms whose frames it reads (simulation/, recording/)."""
