"""Component ids of the partition explorer page (home).

The page's layout (layouts/explorer.py) and its callbacks import these; importing this
module registers no callback."""

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
WEIGHTS = "explorer-weights"  # random or trained (Figure 9)
RESAMPLE = "explorer-resample"
# data
DATASET = "explorer-dataset"
N_POINTS = "explorer-n-points"
DATA_SEED = "explorer-data-seed"
SHIFT_X = "explorer-shift-x"  # the data moved off the origin
SHIFT_Y = "explorer-shift-y"
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
VIEWS_BOX = "explorer-views-box"  # the views; class "stale" after a refused request
TLS = "explorer-tls"
PROJECTOR = "explorer-projector"
PRESET = "explorer-preset"  # pattern: {"type": PRESET, "key": preset key}
CAPTION = "explorer-caption"
PRESET_KEY = "explorer-preset-key"  # the preset whose caption is shown (kept in the URL)
EXPORT = "explorer-export"  # pattern: {"type": EXPORT, "graph": id, "format": png|svg}
GRAPH_SPACE = "explorer-graph"
CURSOR = "explorer-cursor"  # store: a click's coordinates under the mouse (assets/cursor.js)
GRAPH_LAYERS = "explorer-graph-layers"
GRAPH_UNIT = "explorer-graph-unit"
SUMMARY = "explorer-summary"
MESSAGE = "explorer-message"
# live training ("Watch it learn" tab)
TRAIN_PLAY = "explorer-train-play"
TRAIN_STEP = "explorer-train-step"
TRAIN_RESET = "explorer-train-reset"
TRAIN_COUNTER = "explorer-train-counter"
TRAIN_LR = "explorer-train-lr"
TRAIN_BATCH = "explorer-train-batch"
TRAIN_OPTIMIZER = "explorer-train-optimizer"
TRAIN_STEPS = "explorer-train-steps"  # steps per frame
TRAIN_SIDE = "explorer-train-side"  # BN beside zero and random bias
TRAIN_SCRUB = "explorer-train-scrub"
TRAIN_MESSAGE = "explorer-train-message"
GRAPH_TRAIN = "explorer-graph-train"
TRAIN_FRAME_BOX = "explorer-train-frame-box"  # the frame's column (wider side by side)
TRAIN_CURVES_BOX = "explorer-train-curves-box"
GRAPH_CURVES = "explorer-graph-curves"

#: The training panel's frame and curves boxes (bootstrap columns): side by side, and one
#: above the other (BN vs no BN's three panels, or projector type, need the column's width).
TRAIN_BOXES = {False: ("col-12 col-lg-7", "col-12 col-lg-5"), True: ("col-12", "col-12")}
