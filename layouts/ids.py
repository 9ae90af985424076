"""Every component id of the dashboard, in one place (layouts and callbacks import these)."""


class Explorer:
    """The partition explorer page (home)."""

    ROOT = "explorer-root"
    QUERY = "explorer-query"
    SINK = "explorer-sink"  # output of client-side callbacks that return nothing
    # network
    DEPTH = "explorer-depth"
    WIDTH = "explorer-width"
    ACTIVATION = "explorer-activation"
    ALPHA = "explorer-alpha"
    MODE = "explorer-mode"
    WEIGHT_SEED = "explorer-weight-seed"
    RESAMPLE = "explorer-resample"
    # data
    DATASET = "explorer-dataset"
    N_POINTS = "explorer-n-points"
    DATA_SEED = "explorer-data-seed"
    UPLOAD = "explorer-upload"
    UPLOAD_STATUS = "explorer-upload-status"
    CLEAR_POINTS = "explorer-clear-points"
    EXTRA_POINTS = "explorer-extra-points"
    # batch normalization
    BATCH_SIZE = "explorer-batch-size"
    BATCH_SEED = "explorer-batch-seed"
    NEW_BATCH = "explorer-new-batch"
    MU = "explorer-mu"
    SIGMA = "explorer-sigma"  # log2 of the sigma factor
    SCOPE = "explorer-scope"
    TARGET_LAYER = "explorer-target-layer"
    TARGET_UNIT = "explorer-target-unit"  # 1-based in the page
    ANIMATE = "explorer-animate"
    ANIMATE_TIMER = "explorer-animate-timer"
    # view
    LAYER = "explorer-layer"
    VIEW = "explorer-view"
    TLS = "explorer-tls"
    PROJECTOR = "explorer-projector"
    PRESET = "explorer-preset"  # pattern: {"type": PRESET, "key": preset key}
    CAPTION = "explorer-caption"
    PRESET_KEY = "explorer-preset-key"  # the preset whose caption is shown (kept in the URL)
    EXPORT = "explorer-export"  # pattern: {"type": EXPORT, "graph": id, "format": png|svg}
    GRAPH_SPACE = "explorer-graph"
    GRAPH_LAYERS = "explorer-graph-layers"
    GRAPH_UNIT = "explorer-graph-unit"
    SUMMARY = "explorer-summary"
    MESSAGE = "explorer-message"


class Jitter:
    """The jitter page: Figures 6 and 7."""

    DATASET = "jitter-dataset"
    N = "jitter-n"
    DEPTH = "jitter-depth"
    WIDTH = "jitter-width"
    SEED = "jitter-seed"
    BATCH = "jitter-batch"  # log2 of the batch size
    REALIZATIONS = "jitter-realizations"
    VIRTUAL = "jitter-virtual"  # virtual batch size, or empty for plain BN
    STEPS = "jitter-steps"
    OPTIMIZER = "jitter-optimizer"
    LR = "jitter-lr"
    TRAIN = "jitter-train"
    UNTRAIN = "jitter-untrain"
    PROGRESS = "jitter-progress"
    POLL = "jitter-poll"
    JOB = "jitter-job"  # key of the training run being watched
    TRAINED = "jitter-trained"  # key of the trained network in use (None: at initialisation)
    SAVE = "jitter-save"
    DOWNLOAD = "jitter-download"
    LOAD = "jitter-load"
    STATUS = "jitter-status"
    GRAPH = "jitter-graph"
    CURVE = "jitter-curve"  # disagreement area vs batch size
    MARGINS = "jitter-margins"
    NUMBERS = "jitter-numbers"
    MESSAGE = "jitter-message"
    # Figure 7
    F7_SOURCE = "jitter-f7-source"  # "paper" or the layer of this page's network
    F7_BATCH = "jitter-f7-batch"
    F7_TRAIN = "jitter-f7-train"
    F7_VIRTUAL = "jitter-f7-virtual"
    F7_GRAPH = "jitter-f7-graph"
    F7_TABLE = "jitter-f7-table"


class Density:
    """The density page: Figure 3."""

    DEPTH = "density-depth"
    WIDTH = "density-width"
    DATASET = "density-dataset"
    N = "density-n"
    SEED = "density-seed"
    LAYERS = "density-layers"
    GRID = "density-grid"
    EPS = "density-eps"
    RADIUS = "density-radius"
    COMPUTE = "density-compute"
    CANCEL = "density-cancel"
    PROGRESS = "density-progress"
    STATUS = "density-status"
    POLL = "density-poll"
    JOB = "density-job"
    RESULT = "density-result"  # key of the finished run shown
    HEATMAPS = "density-heatmaps"
    RATIOS = "density-ratios"
    MESSAGE = "density-message"


class Jobs:
    """The background-jobs page: the image experiments (Figures 4, 5, 10, Table 1, sec. 5)."""

    TYPE = "jobs-type"
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


def progress_id(job_id: str) -> str:
    """The id of a job's progress bar in the table (browser tests find it by this)."""
    return f"jobs-progress-{job_id}"


class Papers:
    """The debate page: the four papers that qualify the BN paper, and the claims panel."""

    CLAIMS = "papers-claims"  # the claims table
    CLAIMS_REQUEST = "papers-claims-request"  # a store whose initial value computes the table
    # Dannemann & Junike's weight plane
    DJ_GRAPH = "papers-dj-graph"
    DJ_POINTS = "papers-dj-points"  # DataTable of x1, x2, y
    DJ_ADD = "papers-dj-add"
    DJ_RESET = "papers-dj-reset"
    DJ_W01 = "papers-dj-w01"
    DJ_W02 = "papers-dj-w02"
    DJ_SIGMA = "papers-dj-sigma"  # biased / unbiased
    DJ_AFFINE = "papers-dj-affine"  # learnable gamma, beta
    DJ_NUMBERS = "papers-dj-numbers"
    DJ_MESSAGE = "papers-dj-message"
    # Santurkar et al.: landscape and ICS, trained with and without BN
    SL_STEPS = "papers-sl-steps"
    SL_LR = "papers-sl-lr"
    SL_DEPTH = "papers-sl-depth"
    SL_WIDTH = "papers-sl-width"
    SL_NOISY = "papers-sl-noisy"
    SL_TRAIN = "papers-sl-train"
    SL_PROGRESS = "papers-sl-progress"
    SL_STATUS = "papers-sl-status"
    SL_POLL = "papers-sl-poll"
    SL_JOB = "papers-sl-job"
    SL_RESULT = "papers-sl-result"
    SL_LANDSCAPE = "papers-sl-landscape"
    SL_ICS = "papers-sl-ics"
    SL_BOUNDARY = "papers-sl-boundary"
    SL_MESSAGE = "papers-sl-message"
    # Luo et al.: BN as population normalisation + gamma decay
    LUO_DIST = "papers-luo-dist"
    LUO_BATCH = "papers-luo-batch"
    LUO_ETA = "papers-luo-eta"
    LUO_ZETA = "papers-luo-zeta"
    LUO_I2 = "papers-luo-i2"
    LUO_STATS = "papers-luo-stats"
    LUO_GAP = "papers-luo-gap"
    LUO_DYNAMICS = "papers-luo-dynamics"
    LUO_NUMBERS = "papers-luo-numbers"
    LUO_MESSAGE = "papers-luo-message"
    # Ergen et al.: whitening and the closed-form last layer
    EG_DATASET = "papers-eg-dataset"
    EG_N = "papers-eg-n"
    EG_BETA = "papers-eg-beta"
    EG_WHITEN = "papers-eg-whiten"
    EG_UNITS = "papers-eg-units"
    EG_NUMBERS = "papers-eg-numbers"
    EG_MESSAGE = "papers-eg-message"
    LUO_TRAIN = "papers-luo-train"
    LUO_COMPARE = "papers-luo-compare"
    LUO_COMPARE_NUMBERS = "papers-luo-compare-numbers"
    DJ_DATA = "papers-dj-data"  # the data points, draggable
