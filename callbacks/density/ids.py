"""Component ids of the density page: Figure 3.

The page's layout (layouts/density.py) and its callbacks import these; importing this
module registers no callback."""

DEPTH = "density-depth"
WIDTH = "density-width"
DATASET = "density-dataset"
N_POINTS = "density-n-points"
WEIGHT_SEED = "density-weight-seed"
DATA_SEED = "density-data-seed"
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
