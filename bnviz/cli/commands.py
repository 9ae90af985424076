"""The commands of ``bnviz``: where each lives, what it does in one line, and examples.

The table is all that ``bnviz --help`` and a mistyped command need, so they import no command
module; running a command imports its own module only (:mod:`bnviz.cli`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMMANDS", "JOB_COMMANDS", "Command", "summary"]


@dataclass(frozen=True)
class Command:
    module: str  # the module that builds its parser and runs it
    add: str  # module function: add_*(subparsers) builds the command's parser
    run: str  # module function: run_*(args) -> bytes (jobs, worker, data: (bytes, code))
    summary: str  # one line, the top-level help's and the command's own
    examples: tuple[str, ...] = ()  # what its --help ends with; each runs as written


COMMANDS: dict[str, Command] = {
    "partition": Command(
        "bnviz.cli.partition", "add_partition", "run_partition",
        "the exact partition of every layer, as JSON or a picture",
        ("bnviz partition --depth 3 --width 16 --mode random_bias",
         "bnviz partition --format png --out partition.png",
         "bnviz partition --geometry regions.npz --extent 2")),
    "jitter": Command(
        "bnviz.cli.figures", "add_jitter", "run_jitter",
        "decision-boundary realisations across mini-batches (Fig. 6)",
        ("bnviz jitter --batch-size 16 --json",
         "bnviz jitter --format png --out jitter.png")),
    "density": Command(
        "bnviz.cli.figures", "add_density", "run_density",
        "concentration of the facets near the data (Fig. 3)",
        ("bnviz density --depth 4 --width 16 --json",
         "bnviz density --format png --out density.png")),
    "bnstats": Command(
        "bnviz.cli.figures", "add_bnstats", "run_bnstats",
        "distributions of the BN statistics (Fig. 7, eq. 13)",
        ("bnviz bnstats --batch-size 32",)),
    "figure9": Command(
        "bnviz.cli.figures", "add_figure9", "run_figure9",
        "each unit's sigma^2/||w||^2 (TLS error, eq. 8) and the distance of its facets to "
        "the data (Fig. 9)",
        ("bnviz figure9 --json", "bnviz figure9 --out figure9.png")),
    "claims": Command(
        "bnviz.cli.claims", "add_claims", "run_claims",
        "every closed-form claim of the five papers, checked numerically",
        ("bnviz claims --id bn-thm1-tls-minimiser",)),
    "lecture": Command(
        "bnviz.cli.lecture", "add_lecture", "run_lecture",
        "the lecture view's guided tour: list its steps, or export them as slides",
        ("bnviz lecture", "bnviz lecture --export slides")),
    "replicate": Command(
        "bnviz.cli.replicate", "add_replicate", "run_replicate",
        "what reproduces: every result of the five papers, ours beside theirs",
        ("bnviz replicate", "bnviz replicate --json --id bn-cor2-central-arrangement")),
    "train": Command(
        "bnviz.cli.train", "add_train", "run_train",
        "train a 2D network and record its exact partition as it learns",
        ("bnviz train --steps 100 --json",
         "bnviz train --save-weights net.npz --movie training.gif")),
    "slice": Command(
        "bnviz.cli.slice", "add_slice", "run_slice_command",
        "the exact partition of an image network on a plane through three images",
        ("bnviz slice --model net.onnx --data digits --images 0,1,2 --json",
         "bnviz slice --job JOB_ID --arms bn_init --bn train --batches 4 --format png "
         "--out slice.png")),
    "serve": Command(
        "bnviz.cli.serve", "add_serve", "run_serve",
        "the production stack: nginx in front of gunicorn, and the job worker, on "
        "BNVIZ_HOST:BNVIZ_PORT",
        ("bnviz serve", "BNVIZ_PORT=8080 bnviz serve --no-worker")),
}

#: Commands that return (output, exit code): jobs, the worker, data downloads.  Their parser
#: lists the job types, so it is built (and torch loaded) only when one of them is asked for.
JOB_COMMANDS: dict[str, Command] = {
    "jobs": Command(
        "bnviz.cli.jobs", "add_commands", "run_jobs",
        "background image experiments (Figures 4, 5, 10, Table 1, section 5)",
        ("bnviz jobs list", "bnviz jobs submit smart-init --dataset digits --epochs 2",
         "bnviz jobs show JOB_ID")),
    "worker": Command(
        "bnviz.cli.jobs", "add_commands", "run_worker",
        "run a job worker (Celery with BNVIZ_BROKER_URL, else the local pool)",
        ("bnviz worker --concurrency 2",)),
    "data": Command(
        "bnviz.cli.jobs", "add_commands", "run_data",
        "image data sets",
        ("bnviz data download cifar10",)),
}


def summary(name: str) -> str:
    """A command's one line (its parser's help and description)."""
    return (COMMANDS.get(name) or JOB_COMMANDS[name]).summary
