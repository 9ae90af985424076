"""Component ids of the lecture page (/lecture). Importing this registers no callback."""

ROOT = "lecture-root"  # class "lecture-root lecture-light|lecture-dark"
STEP = "lecture-step"  # store: the step shown, 0 (the explorer's state) or 1..len(TOUR)
BASE = "lecture-base"  # store: the explorer's settings a link from the explorer brought
RESET = "lecture-reset"  # store: a count, raised by the r key (the step's own settings again)
THEME = "lecture-theme"  # store: "light" or "dark"
QUERY = "lecture-query"  # store: the URL query of the state shown
SINK = "lecture-sink"
LINK = "lecture-link"  # store: the full URL of the state shown (built in the browser)
TITLE = "lecture-title"
COUNTER = "lecture-counter"
CAPTION = "lecture-caption"
MESSAGE = "lecture-message"
GRAPH = "lecture-graph"
PREV = "lecture-prev"
NEXT = "lecture-next"
PLAY = "lecture-play"
TIMER = "lecture-timer"
THEME_BUTTON = "lecture-theme-button"
EXPORT = "lecture-export"  # the "export all" button; disabled while the export runs
DOWNLOAD = "lecture-download"
EXPORT_STATUS = "lecture-export-status"  # the export's line, and its progress bar while it runs
EXPORT_PROGRESS = "lecture-export-progress"  # the bar, in the status while the export runs
EXPORT_JOB = "lecture-export-job"  # store: the id of the running export's job (not kept)
EXPORT_POLL = "lecture-export-poll"  # interval: on while the export's job runs
HELP_BUTTON = "lecture-help-button"
HELP = "lecture-help"
BLANK = "lecture-blank"
QR = "lecture-qr"
QR_URL = "lecture-qr-url"
# the four sliders (always shown) and what they read
MU = "lecture-mu"
SIGMA = "lecture-sigma"  # log2 of the sigma factor
BATCH = "lecture-batch"  # log2 of the batch size; its last position is "all"
DEPTH = "lecture-depth"
SLIDERS = {"mu": MU, "sigma": SIGMA, "batch": BATCH, "depth": DEPTH}
PLOT = "lecture-plot"  # the figure's box: class "lecture-plot stale" after a refused value
ANIMATION = "lecture-animation"  # store: the slider the step's play button sweeps
QR_PANEL = "lecture-qr-panel"
QR_BUTTON = "lecture-qr-button"
CURSOR = "lecture-cursor"  # store: a click's coordinates under the mouse (assets/cursor.js)
MAIN = "lecture-main"  # the figure and its dock; class "lecture-main lecture-wide": dock under
READOUT = "lecture-readout"  # the values the step is about, under the caption
TYPE_SCALE = "lecture-type-scale"  # store: the type size factor the + and - keys set
MARK = "lecture-mark"  # store: a click's point and nearest folded hyperplane, marked on the plot
INFO = "lecture-info"  # what the click found: region code, nearest facet, eq. 11
FIGURE = "lecture-figure"  # store: the server's figure; the graph shows it with the ghost
SPLIT = "lecture-split"  # store: an input-space step without BN | with BN (the s key)
SPLIT_BUTTON = "lecture-split-button"
LINK_NOTE = "lecture-link-note"  # store: what the page's link had that was not used
# the presenter view (/lecture/presenter): the lecture's components, and its own panel
PRESENTER = "lecture-presenter"  # the presenter's panel; its presence marks the view
NOTES = "lecture-notes"  # what to say, what to point at, what to ask
NEXT_TITLE = "lecture-next-title"
NEXT_GRAPH = "lecture-next-graph"  # the next step's picture, small
CLOCK = "lecture-clock"  # elapsed and planned time (assets/presenter.js keeps it)
PLANNED = "lecture-planned"  # the step's planned time; data-planned-seconds for the clock
STEP_LIST = "lecture-step-list"
PROJECTOR_LINK = "lecture-projector-link"  # opens the projector's window (at the session)
SESSION_LINK = "lecture-session-link"  # the session's link, for the hall's computer
BLANKED = "lecture-blanked"  # the presenter's line while the projector is blank (b)
ASKED = "lecture-asked"  # the presenter's line while the hall's question is open (a)
# the lecture's one state, shared by its windows (assets/presenter.js, issue 46)
SYNC = "lecture-sync"  # store: when this window last saw its state change (presenter.js)
# the next step prepared in the browser before the click (callbacks/lecture/prefetch.py)
PREFETCH_KEY = "lecture-prefetch-key"  # store: "step|theme|split" of the state shown
PREFETCH = "lecture-prefetch"  # store: the next step's figure, title, caption, readout
PREFETCH_SINK = "lecture-prefetch-sink"
DRAWN = "lecture-drawn"  # store: the state the graph shows from the prefetch (show empties it)
# named snapshots (the n key; callbacks/lecture/snapshots.py)
SNAPSHOTS = "lecture-snapshots"  # store: {"items": [{"name", "query"}], "max", "name_max"}
SNAPSHOT_LIST = "lecture-snapshot-list"  # in the keys panel (?)
PRESENTER_SNAPSHOTS = "lecture-presenter-snapshots"  # under the presenter's step list
OPEN = "lecture-open"  # the navbar's Lecture link, on every page (app.py)
SNAPSHOT_LINK = "lecture-snapshot"  # class of a snapshot's link (assets/lecture-url.js)
