"""The `followgraph` command line: the typer app and its commands, each written in the module of
its concern (serve.py, files.py, admin.py, changes.py)."""

from __future__ import annotations

import typer

from followgraph.cli import account_states, admin, files, plan, serve
from followgraph.cli import changes as cli_log
from followgraph.cli.accounts import accounts

app = typer.Typer(
    help="FollowGraph: a GraphQL follow graph on Redis.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

app.command(short_help="Serve the API, the web app (/) and GraphiQL (/graphql).")(serve.serve)
app.command(short_help="Load a demo graph (power-law fans) into an empty store.")(serve.demo)
app.command("import", short_help="Import follows, users or controls from CSV or JSON Lines.")(files.import_)
app.command(short_help="Export every follow, user or control to CSV or JSON Lines.")(files.export)
app.command("verify", short_help="Check the fans and mutual sets against the following sets.")(
    admin.verify_command
)
app.command(short_help="Rewrite the fans and mutual sets from the following sets.")(admin.repair)
app.command(short_help="Rebuild the search index from every user.")(admin.reindex)
app.command(short_help="Print a bearer token for a user id.")(admin.token)
app.command("cluster", short_help="Run a local Redis Cluster in the foreground.")(admin.cluster_command)
app.command("export-schema")(admin.export_schema)
app.command("plan", short_help="Plan capacity: Redis memory, masters, API processes for a workload.")(
    plan.plan_command
)
app.command(short_help="Feed the SQL copy from the change log (apart from serve).")(cli_log.sync)
app.command(short_help="Rebuild an empty Redis from the SQL copy.")(cli_log.rebuild)
app.command(short_help="Compare the SQL copy with Redis (--repair-sql rewrites it).")(cli_log.reconcile)
app.add_typer(cli_log.events, name="events", short_help="Read the change log (events tail).")
app.add_typer(
    accounts,
    name="accounts",
    short_help="One account: its lists as Mastodon's CSV, its state, suspension, deletion.",
)
# The account commands register themselves on `accounts` (imported for that).
_ = account_states


def main() -> None:
    app()
