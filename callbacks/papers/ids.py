"""Component ids of the debate page: the four papers that qualify the BN paper, and the
claims panel.

The page's layout (layouts/papers.py) and its callbacks import these; importing this
module registers no callback."""

CLAIMS = "papers-claims"  # the claims table
CLAIMS_REQUEST = "papers-claims-request"  # a store whose initial value computes the table
CLAIMS_RETRY = "papers-claims-retry"  # an interval in a busy answer: asks for the table again
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
REPLICATION_LINK = "papers-replication-link"
