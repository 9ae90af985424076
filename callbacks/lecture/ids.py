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
EXPORT = "lecture-export"
DOWNLOAD = "lecture-download"
EXPORT_STATUS = "lecture-export-status"
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
