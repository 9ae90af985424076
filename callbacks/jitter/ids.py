"""Component ids of the jitter page: Figures 6 and 7.

The page's layout (layouts/jitter.py) and its callbacks import these; importing this
module registers no callback."""

DATASET = "jitter-dataset"
N_POINTS = "jitter-n-points"
DEPTH = "jitter-depth"
WIDTH = "jitter-width"
WEIGHT_SEED = "jitter-weight-seed"
DATA_SEED = "jitter-data-seed"
BATCH_SEED = "jitter-batch-seed"
BATCH = "jitter-batch"  # log2 of the batch size
REALIZATIONS = "jitter-realizations"
VIRTUAL = "jitter-virtual"  # virtual batch size, or empty for plain BN
TRAIN_STEPS = "jitter-train-steps"
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
