"""The ``tensorweave server`` and ``tensorweave launch`` commands."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from ..runtime.distributed.cluster import as_cluster_spec, default_token, task_config_from_env


def add_commands(sub: Any) -> None:
    """Add ``server`` and ``launch`` to the CLI's subparsers."""
    server = sub.add_parser(
        "server", help="run one task of a cluster until killed",
        description="Start this task's server (from TW_CONFIG, or --cluster/--job/--task) "
                    "and serve until SIGTERM or Ctrl-C, then shut down cleanly.")
    server.add_argument("--cluster", help="the cluster spec as JSON, e.g. "
                        "'{\"ps\": [\"127.0.0.1:2222\"], \"worker\": [\"127.0.0.1:2223\"]}'")
    server.add_argument("--job", help="this task's job name")
    server.add_argument("--task", type=int, help="this task's index in its job")
    server.add_argument("--token", help="the cluster token every RPC must carry "
                        "(default: TW_CONFIG's 'token', else TW_TOKEN; prefer those or "
                        "--token-file: a command line is visible to every local user)")
    server.add_argument("--token-file", help="read the cluster token from this file")
    server.add_argument("--insecure", action="store_true",
                        help="serve a non-loopback address without a token (anyone who can "
                             "reach it can run graphs as this user)")
    server.add_argument("--tls-key", help="PEM private key of this task (TLS)")
    server.add_argument("--tls-cert", help="PEM certificate of this task (TLS)")
    server.add_argument("--tls-ca", help="PEM certificate of the cluster's CA (TLS)")
    server.add_argument("--target", default="cpu", choices=["cpu", "reference"],
                        help="kernels for the graphs this task runs (default cpu)")
    server.set_defaults(run=_server)
    launch = sub.add_parser(
        "launch", help="start a local cluster running a script in every task",
        description="Run SCRIPT once per task of a new local cluster (free loopback ports, "
                    "TW_CONFIG per process, output prefixed by task); stop everything when "
                    "the workers are done, one fails, or on Ctrl-C.")
    launch.add_argument("--ps", type=int, default=1, help="number of PS tasks (default 1)")
    launch.add_argument("--workers", type=int, default=1, help="number of workers (default 1)")
    launch.add_argument("--timeout", type=float, help="stop everything after this many seconds")
    launch.add_argument("--token", help="cluster token (default: a fresh random one)")
    launch.add_argument("script", help="the Python script every task runs")
    launch.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments for the script (after --)")
    launch.set_defaults(run=_launch)


def _server(args: argparse.Namespace) -> str:
    from ..cli import CliError
    from ..runtime.distributed.rpc import TlsConfig
    from ..runtime.distributed.server import Server
    config = task_config_from_env()
    if args.cluster:
        if args.job is None or args.task is None:
            raise CliError("--cluster needs --job and --task")
        cluster, job, task = as_cluster_spec(args.cluster), args.job, args.task
    elif config is not None:
        cluster, job, task = config.cluster, config.job_name, config.task_index
    else:
        raise CliError("no cluster: set TW_CONFIG or give --cluster, --job and --task")
    tls_parts = (args.tls_key, args.tls_cert, args.tls_ca)
    if any(tls_parts) and not all(tls_parts):
        raise CliError("TLS needs all of --tls-key, --tls-cert and --tls-ca")
    tls = TlsConfig(*tls_parts) if all(tls_parts) else None
    token = args.token or default_token()
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    server = Server(cluster, job, task, token=token, tls=tls, target=args.target,
                    insecure=args.insecure)
    stopping = threading.Event()

    def stop(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"tensorweave: {server.service.task_name} serving at {server.address}",
          file=sys.stderr, flush=True)
    while not stopping.wait(0.5):
        pass
    server.stop()
    print(f"tensorweave: {server.service.task_name} stopped", file=sys.stderr, flush=True)
    raise SystemExit(0)


def _launch(args: argparse.Namespace) -> str:
    from .launch import launch
    rest = list(args.args)
    if rest and rest[0] == "--":
        rest = rest[1:]
    raise SystemExit(launch(args.script, rest, args.ps, args.workers, token=args.token,
                            timeout=args.timeout))


__all__ = ["add_commands"]
