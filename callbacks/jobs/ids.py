"""Component ids of the background-jobs page: the image experiments (Figures 4, 5, 10,
Table 1, sec. 5).

The page's layout (layouts/jobs.py) and its callbacks import these; importing this
module registers no callback."""

TYPE = "jobs-type"
EXPLAIN = "jobs-explain"  # what the chosen experiment is, the paper's claim, our runs
PARAM = "jobs-param"  # pattern: {"type": PARAM, "name": parameter name}
PARAM_ROW = "jobs-param-row"  # pattern: {"type": PARAM_ROW, "name": parameter name}
SUBMIT = "jobs-submit"
MESSAGE = "jobs-message"
POLL = "jobs-poll"
TABLE = "jobs-table"
SELECTED = "jobs-selected"  # the job opened below the table
OVERLAY = "jobs-overlay"  # jobs whose curves are overlaid
DETAIL = "jobs-detail"
CANCEL = "jobs-cancel"
RERUN = "jobs-rerun"
GRAPH = "jobs-graph"
OVERLAY_GRAPH = "jobs-overlay-graph"
LOG = "jobs-log"
SHOWN = "jobs-shown"  # what the detail view last drew (skip unchanged redraws)
BACKEND = "jobs-backend"
TOKEN = "jobs-token"  # the jobs token (BNVIZ_JOBS_TOKEN): shown only when the server has one
TOKEN_ROW = "jobs-token-row"


def progress_id(job_id: str) -> str:
    """The id of a job's progress bar in the table (browser tests find it by this)."""
    return f"jobs-progress-{job_id}"
#: The jobs token as the jobs page's field last held it, kept for the browser tab (every page
#: has this store, app.py): the other pages' background starts and cancels send it.
TOKEN_STORE = "jobs-token-store"
