"""One module per subcommand, each with ``register(subparsers)``.

Adding a subcommand: write ``quotatop/commands/NAME.py`` with a ``register``
function that adds its parser and sets ``func``, then list NAME in COMMANDS.
"""

COMMANDS = ["simulate", "snapshot", "record", "replay", "predict", "web", "exporter",
            "report", "whatif", "advise"]
