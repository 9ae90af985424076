"""Every bound and cost cap of the live computations, in one place.

The pages, the command line (and later the job submission and an HTTP API) read these
through the parameter models of :mod:`bnviz.params`; the engine keeps its runtime region caps
(:data:`MAX_REGIONS`, :data:`EXPLORER_MAX_REGIONS`, :data:`JITTER_MAX_REGIONS`) as the final
guard.  Nothing here imports torch, so ``bnviz --help`` and argument errors stay fast.

This module imports nothing of bnviz: it is the bottom of the dependency graph, so that every
layer (the engine in :mod:`bnviz.core` and the data sets in :mod:`bnviz.data` included)
reads its caps from here without depending on the parameter models above it
(tests/test_architecture.py checks both, and that no ``MAX_*`` cap on user input is defined
anywhere else).
"""

from __future__ import annotations

__all__ = [
    "ACTIVATIONS",
    "ARCHS",
    "BATCH_ALL",
    "BN_SLICE_MODES",
    "DANNEMANN_MAX_POINTS",
    "DATASETS",
    "DENSITY_LIMITS",
    "DENSITY_PAGE_LIMITS",
    "ERGEN_MAX_POINTS",
    "EXPLORER_LIMITS",
    "EXPLORER_MAX_REGIONS",
    "EXPLORER_MAX_UPLOAD_BYTES",
    "EXPLORER_MAX_URL_POINTS",
    "FIGURE7_LIMITS",
    "GEOMETRY_SUFFIXES",
    "IMAGE_JOB_LIMITS",
    "IMAGE_SHAPES",
    "JITTER_LIMITS",
    "JITTER_MAX_NETWORK_BYTES",
    "JITTER_MAX_REGIONS",
    "LANDSCAPE_LIMITS",
    "LEARNING_RATE",
    "LECTURE_MAX_SNAPSHOTS",
    "LECTURE_MAX_SNAPSHOT_NAME",
    "LECTURE_MAX_SNAPSHOT_QUERY",
    "LECTURE_HALL_BURST",
    "LECTURE_HALL_MAX_BODY",
    "LECTURE_HALL_MAX_TAPS",
    "LECTURE_HALL_QUESTION_HOURS",
    "LECTURE_HALL_RATE",
    "LECTURE_HALL_TAP_SECONDS",
    "LECTURE_SYNC_BURST",
    "LECTURE_SYNC_MAX_BODY",
    "LECTURE_SYNC_MAX_CLIENTS",
    "LECTURE_SYNC_MAX_SESSIONS",
    "LECTURE_SYNC_RATE",
    "LECTURE_SYNC_SESSION_HOURS",
    "MAX_CONCENTRATION_PASSES",
    "MAX_COORDINATE",
    "MAX_DENSITY_WORK",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_EXTENT",
    "MAX_EXTRA_POINTS",
    "MAX_FOLDER_IMAGES",
    "MAX_LANDSCAPE_WORK",
    "MAX_LR_EXTENSIONS",
    "MAX_NETWORK_FILE_BYTES",
    "MAX_NOISE",
    "MAX_PARAMETER",
    "MAX_POINTS",
    "MAX_REGIONS",
    "MAX_SAMPLES",
    "MAX_TRAINING_IMAGES",
    "MAX_TRAIN_SIZE",
    "MAX_UNITS",
    "MAX_WIDTH",
    "MIN_SAMPLES",
    "MODES",
    "OPTIMIZERS",
    "PAGE_SEED_MAX",
    "SCOPES",
    "SEED_MAX",
    "SLICE_JOB_MAX_REGIONS", "SLICE_MAP_MAX_ZOOM", "SLICE_MAP_RECUT_REGIONS",
    "SLICE_JOB_MAX_TOTAL_REGIONS", "SLICE_LIMITS", "SLICE_MAX_FILE_BYTES", "SLICE_MAX_GRAPH_DEPTH",
    "SLICE_MATRIX_BYTES", "SLICE_MAX_BATCH_BYTES", "SLICE_MAX_OPS", "SLICE_MAX_POOL_INPUTS",
    "SLICE_MAX_POOL_KERNEL", "SLICE_MAX_POOL_OVERLAP", "SLICE_MAX_REGIONS",
    "SLICE_MAX_TENSOR_UNITS", "SLICE_MAX_TOTAL_REGIONS", "SLICE_MAX_TOTAL_UNITS",
    "SLICE_MAX_UPLOAD_BYTES", "SLICE_MAX_WEIGHT_VALUES", "SLICE_PAGE_MAX_REGIONS",
    "SLICE_REFERENCE_MULTIPLY_ADDS",
    "TEST_SIZES",
    "TRAIN_LIMITS",
    "TRAIN_MAX_FRAME_REGIONS",
    "TRAIN_MAX_REGIONS",
    "TRAIN_SIZES",
    "TRAIN_STEPS_PER_FRAME",
    "WEIGHTS",
]

# ---- choices ----------------------------------------------------------------------------
#: a(u) = u for u > 0, alpha * u otherwise: ReLU (alpha 0), leaky ReLU, absolute value (-1).
ACTIVATIONS: tuple[str, ...] = ("relu", "leaky_relu", "abs")
#: The 2D data sets (:func:`bnviz.data.datasets.make_dataset`).
DATASETS: tuple[str, ...] = ("star", "moons", "circles", "blobs", "spiral", "gaussian")
#: How h_l is set (BN paper section 3.3): BN statistics, no bias, or a random bias.
MODES: tuple[str, ...] = ("bn", "zero_bias", "random_bias")
#: What the explorer's mu and sigma sliders act on.
SCOPES: tuple[str, ...] = ("all", "layer", "unit")
OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
#: The image networks (:func:`bnviz.images.networks.build_model`).
ARCHS: tuple[str, ...] = ("resnet9", "cnn", "resnet50")
#: Texts that mean "the whole data set" for a batch size (test-time statistics).
BATCH_ALL: tuple[str, ...] = ("", "all", "none", "full")

# ---- seeds ------------------------------------------------------------------------------
#: Seeds must fit torch's int64 (the command line); the pages keep to 31 bits.
SEED_MAX = 2**63 - 1
PAGE_SEED_MAX = 2**31 - 1

# ---- data and networks from users (any caller) -----------------------------------------
#: Largest number of points a data set may have (generated, uploaded or read from a file).
MAX_POINTS = 1_000_000
#: Largest |coordinate| accepted: far beyond any input box, small enough that the float64
#: statistics of a batch (squares of W x) cannot overflow.
MAX_COORDINATE = 1e6
#: Largest accepted ``noise`` of a generated data set (std of the positional jitter).
MAX_NOISE = 1.0
#: Largest |entry| accepted in a network's weights and biases (keeps float64 statistics
#: finite).
MAX_PARAMETER = 1e6
#: A network file's arrays once decompressed (a network of MAX_WIDTH x MAX_DEPTH in float64
#: is ~8 MB): a small compressed file cannot expand to GBs.
MAX_NETWORK_FILE_BYTES = 64_000_000
#: An image folder larger than this is refused (images are held in memory as uint8).
MAX_FOLDER_IMAGES = 200_000

# ---- the exact partition (any caller) -----------------------------------------------------
#: The exact partition grows with width and depth (up to ~width^(2*depth) regions in theory,
#: far fewer in practice: :func:`bnviz.params.cost.expected_regions`).
MAX_DEPTH = 16
MAX_WIDTH = 256
#: Largest half-width of the input box (float64 geometry stays meaningful well inside this).
MAX_EXTENT = 1e6
#: Regions of one layer's partition above which the computation stops with a clear message.
MAX_REGIONS = 2_000_000

# ---- the explorer page --------------------------------------------------------------------
#: Bounds of every explorer setting: (lowest, highest).  They also cap what one web request
#: may cost: width x depth here, and the region cap below.
EXPLORER_LIMITS: dict[str, tuple[float, float]] = {
    "depth": (1, 12),
    "width": (2, 64),
    "alpha": (0.01, 0.99),
    "weight_seed": (0, PAGE_SEED_MAX),
    "n_points": (2, 2000),
    "data_seed": (0, PAGE_SEED_MAX),
    "batch_seed": (0, PAGE_SEED_MAX),
    "mu_t": (0.0, 1.5),
    "sigma_s": (0.25, 4.0),
    "target_layer": (1, 12),
    "target_unit": (0, 63),
    "layer": (1, 12),
    "extent": (0.5, 20.0),
    "shift": (-2.0, 2.0),  # the data moved off the origin (Figure 1)
}
#: Regions of one layer above which an explorer request stops with a message.
EXPLORER_MAX_REGIONS = 60_000
#: Points a user may add by clicking or uploading.
MAX_EXTRA_POINTS = 2000
#: Added points kept in a shareable URL (more are kept in the page, not in the link).
EXPLORER_MAX_URL_POINTS = 300
#: The explorer's point-file upload (decoded bytes).
EXPLORER_MAX_UPLOAD_BYTES = 1_000_000

# ---- decision-boundary jitter (Figure 6) ----------------------------------------------------
#: (lowest, highest) of each setting; they also bound what one request may cost.
JITTER_LIMITS: dict[str, tuple[int, int]] = {
    "n_points": (8, 2000),
    "depth": (1, 6),
    "width": (2, 32),
    "batch_size": (2, 512),
    "realizations": (1, 128),
    "train_steps": (0, 5000),
}
#: Regions of all K realisations together above which a jitter request stops (with the work
#: cap of bnviz.core.partition, one layer at the cap takes about 1-2 s on a 2-core CPU).
JITTER_MAX_REGIONS = 300_000
#: The jitter page's network upload: its networks (<= 6 layers of 32 units) take ~50 kB.
JITTER_MAX_NETWORK_BYTES = 1_000_000
#: Learning rates of the training (exclusive of 0, inclusive of 10).
LEARNING_RATE: tuple[float, float] = (0.0, 10.0)
#: How far ``bnviz jobs run --lrs ... --extend-lrs`` may widen its grid: at most this many
#: rates added, each a factor of two beyond the grid's edge (every one a whole sweep's runs).
MAX_LR_EXTENSIONS = 4

# ---- live training (bnviz train, the explorer's play button) ------------------------------
#: (lowest, highest) of each setting of a live training (:mod:`bnviz.params.live`).
TRAIN_LIMITS: dict[str, tuple[int, int]] = {
    "n_points": (8, 2000),
    "depth": (1, 8),
    "width": (2, 32),
    "steps": (0, 20_000),
    "frames": (1, 300),
    "batch_size": (2, 512),
}
#: Steps one frame of the explorer's live training trains (a request: at most about 1 s a
#: mode at the largest network, 4.4 ms a step measured on the 2-core machine).
TRAIN_STEPS_PER_FRAME: tuple[int, int] = (1, 200)
#: Regions one frame's exact partition may have (checked from an estimate before training,
#: and by the engine on every frame: training adds regions).
TRAIN_MAX_REGIONS = 60_000
#: Regions of all the frames of one run together, estimated before training.
TRAIN_MAX_FRAME_REGIONS = 1_500_000

# ---- facet concentration (Figure 3) -------------------------------------------------------
#: Cap on one density computation: grid^2 x depth x width^2 multiply-adds (the paper's
#: Figure 3 at grid 512 is 2^18 x 11 x 2^20 ~ 3e12).
MAX_DENSITY_WORK = 4e12
#: The command line's bounds (eps in grid cells: 1 cell is the 4 neighbours).
DENSITY_LIMITS: dict[str, tuple[float, float]] = {
    "depth": (1, MAX_DEPTH),
    "width": (1, 4096),
    "n_points": (1, MAX_POINTS),
    "grid": (2, 2048),
    "eps": (1.0, 16.0),
}
#: The density page's bounds (its background run also honours MAX_DENSITY_WORK).
DENSITY_PAGE_LIMITS: dict[str, tuple[float, float]] = {
    "depth": (1, 16),
    "width": (2, 1024),
    "n_points": (2, 2000),
    "weight_seed": (0, PAGE_SEED_MAX),
    "data_seed": (0, PAGE_SEED_MAX),
    "grid": (16, 512),
    "eps": (1.0, 8.0),
}

# ---- distributions of the BN statistics (Figure 7) ------------------------------------------
MAX_TRAIN_SIZE = 100_000
MIN_SAMPLES = 10
MAX_SAMPLES = 200_000
#: samples x batch size: the mini-batches held at once.
MAX_ELEMENTS = 50_000_000
#: Units of the synthetic Figure 7 setup (the paper has 3).
MAX_UNITS = 16
FIGURE7_LIMITS: dict[str, tuple[int, int]] = {
    "train_size": (2, MAX_TRAIN_SIZE),
    "batch_size": (2, MAX_TRAIN_SIZE),
    "samples": (MIN_SAMPLES, MAX_SAMPLES),
    "virtual_batch_size": (2, MAX_TRAIN_SIZE),
}


# ---- Santurkar et al.'s 2D landscape run (the debate page) --------------------------------
LANDSCAPE_LIMITS: dict[str, tuple[float, float]] = {
    "n_points": (16, 2000), "depth": (1, 8), "width": (2, 64), "steps": (1, 2000),
    "batch_size": (4, 512), "lr": (1e-4, 2.0), "etas": (2, 32),
    # the step sizes eta, in multiples of lr (the paper: [1/2, 4])
    "eta": (0.0, 100.0),
}
#: steps x (step sizes + depth + 2) x batch x width^2 x depth, both arms: the
#: forward-backward work of one run (:func:`bnviz.params.cost.landscape_work`); at the cap
#: about 2e11 float64 flops, a minute or two on 2 cores.
MAX_LANDSCAPE_WORK = 3e10

# ---- the other papers (the debate page) ----------------------------------------------------
#: Data points a user may give Dannemann et al.'s one-neuron weight plane (a tiny problem
#: whatever the size: a small picture of n^2 loss evaluations).
DANNEMANN_MAX_POINTS = 50
#: Data points of Ergen et al.'s closed form against training (one training per request).
ERGEN_MAX_POINTS = 60

# ---- the image experiments (jobs) ----------------------------------------------------------
IMAGE_JOB_LIMITS: dict[str, tuple[float, float]] = {
    "width": (1, 512), "epochs": (1, 1000), "runs": (1, 50), "batch_size": (2, 4096),
    "lr": (1e-6, 10.0), "seed": (0, PAGE_SEED_MAX), "max_train": (0, 10_000_000),
    "image_size": (8, 512), "gpus": (1, 64), "noise": (0.0, 10.0), "images": (1, 10_000),
    "samples": (2, 4096), "eps": (1e-6, 100.0), "etas": (2, 16), "measure_every": (1, 10_000),
    "validation": (0.0, 0.5),
}
#: A job's work is capped (epochs x runs x arms x training images; concentration: images x
#: samples x radii x runs x arms x 2 kinds): one user cannot fill a worker for weeks by
#: mistake (:mod:`bnviz.params.cost`).
MAX_TRAINING_IMAGES = 2e9
MAX_CONCENTRATION_PASSES = 2e8
#: Training images of the standard data sets (digits: its fixed 3/4 split of 1797); an image
#: folder counts as the most it may hold (MAX_FOLDER_IMAGES).
TRAIN_SIZES: dict[str, int] = {"digits": 1352, "glyphs": 10_800, "cifar10": 50_000,
                               "cifar100": 50_000, "svhn": 73_257}
#: Test images of the standard data sets (evaluated after every epoch: part of a job's cost).
TEST_SIZES: dict[str, int] = {"digits": 445, "glyphs": 3_600, "cifar10": 10_000,
                              "cifar100": 10_000, "svhn": 26_032}
#: (channels, side, classes) of the standard data sets' images.
IMAGE_SHAPES: dict[str, tuple[int, int, int]] = {
    "digits": (1, 8, 10), "glyphs": (3, 32, 36), "cifar10": (3, 32, 10),
    "cifar100": (3, 32, 100), "svhn": (3, 32, 10)}

#: The explorer's and ``bnviz figure9``'s networks: random weights, or trained first (Figure 9).
WEIGHTS: tuple[str, ...] = ("random", "trained")

#: The geometry files ``bnviz partition --geometry`` writes, by suffix (bnviz.core.export).
GEOMETRY_SUFFIXES: tuple[str, ...] = (".npz", ".parquet", ".geojson")

# ---- slices of image networks (bnviz slice) -------------------------------------------------
#: (lowest, highest) of each setting of a slice (:mod:`bnviz.params.slice`).
SLICE_LIMITS: dict[str, tuple[int, int]] = {
    "batches": (1, 16), "batch_size": (2, 1024),
    "tiles": (1, 256),  # a window cut as tiles, merged exactly (bnviz.slices.tiles)
    "workers": (1, 64),  # processes for the tiles (default: the usable cores)
}
#: Regions of one slice (every layer's, the estimate of the last) above which it is refused
#: before any work: about 4 minutes of cutting and 3 GB of kept regions on the 2-core machine
#: (a digits ResNet9 of width 16: 49 k regions in 11 s).
SLICE_MAX_REGIONS = 1_000_000
#: The same cap for K mini-batches together (train mode's jitter).
SLICE_MAX_TOTAL_REGIONS = 2_000_000
#: The largest network a slice reads (checked when it is loaded, before any work): units of
#: one tensor per image (64 channels of 64 x 64), of all its tensors together, and ops.
SLICE_MAX_TENSOR_UNITS = 2**18
SLICE_MAX_TOTAL_UNITS = 2**21
SLICE_MAX_OPS = 512
#: Bytes of one network's convolution matrices in a process (bnviz.slices.conv_products),
#: planned before a forward or a cut; past it, conv2d (the same partition): a ResNet9 cut
#: counts 24 MB, the CNN's 139 MB; a 600 KB upload held 2.2 GB before (docs/slices.md).
SLICE_MATRIX_BYTES = 192 * 2**20
#: Checked when a network is loaded: its weights summed over its ops (a shared one counted for
#: each: folding BN and the snap copy it; ResNet-18 has 11.2M), the inputs its max pools'
#: windows read (a stride-1 3x3 pool on 2^18 units fits) and how many windows read one input
#: (a 3x3 pool at stride 1: 9; the cut marks each region's winners, a byte a window input),
#: a window's inputs (a global pool of 64 x 64 cut a region in 0.03 s, of 128 x 128 in 0.3 s
#: and two in 5.2 s); and before train mode's statistics, the bytes of a mini-batch's maps.
SLICE_MAX_WEIGHT_VALUES = 2**24
SLICE_MAX_POOL_INPUTS = 2**22
SLICE_MAX_POOL_OVERLAP = 64
SLICE_MAX_POOL_KERNEL = 4096
SLICE_MAX_BATCH_BYTES = 2**30
#: Graphs nested in ONNX attributes (If, Loop, Scan) walked before any tensor is read.
SLICE_MAX_GRAPH_DEPTH = 32
#: The largest network file a slice reads (ONNX or safetensors; a slice's network is small).
SLICE_MAX_FILE_BYTES = 512 * 2**20
#: The largest network file the /slice page takes (the page's upload box and the request
#: guard refuse larger bodies first).
SLICE_MAX_UPLOAD_BYTES = 32 * 2**20
#: Multiply-adds an image up to which a network gets the whole region caps above; a heavier
#: one gets them scaled down in proportion, as a region's cut costs (one core: the digits
#: ResNet9's 1.49M about 0.1 ms a region, the appendix CNN's 20.0M about 0.44 ms).
SLICE_REFERENCE_MULTIPLY_ADDS = 2**25
#: Regions of one network's slice a /slice page job may cut (about 30 s on the 2-core machine
#: a network, and what a browser still draws).
SLICE_PAGE_MAX_REGIONS = 150_000
#: Regions of one network's slice a slice job may cut (``bnviz slice --submit``, the /slice
#: page's "run as a job"), by the estimate's bound: cut as tiles, each stored as it is done
#: (bnviz.slices.tiled_job).  A digits ResNet9's default window holds about 7 million; 20
#: million is about 3 hours of one core at 2,000 regions a second and some GB of tiles.
SLICE_JOB_MAX_REGIONS = 20_000_000
#: The same cap for K mini-batches together (train mode's jitter, as a job).
SLICE_JOB_MAX_TOTAL_REGIONS = 40_000_000
#: Regions (over a slice job's partitions) a view of its map may hold to be cut again exactly
#: and drawn as vectors (bnviz.slices.slice_map): about a second of cutting on one core.
SLICE_MAP_RECUT_REGIONS = 6_000
#: The deepest zoom of a slice job's map: 2^12 map tiles a side of its window, far below any
#: region of a real window (and a bound on the map tiles a view may ask for).
SLICE_MAP_MAX_ZOOM = 12
BN_SLICE_MODES: tuple[str, ...] = ("eval", "train")

# The lecture's named snapshots (a link's ``snaps``, callbacks/lecture/state.py)
#: Snapshots a lecture keeps (the newest), and a name's length.
LECTURE_MAX_SNAPSHOTS = 12
LECTURE_MAX_SNAPSHOT_NAME = 40
#: The longest snapshot query kept (a tour step's is under 100 characters; the explorer's
#: state, step 0, carries its settings).
LECTURE_MAX_SNAPSHOT_QUERY = 600

# The lecture's state shared by its windows through the server (a session link's
# ``session``: bnviz.server.lecture_sync)
#: Sessions kept (past it the one changed longest ago goes), and hours one is kept unchanged.
LECTURE_SYNC_MAX_SESSIONS = 1000
LECTURE_SYNC_SESSION_HOURS = 24
#: The largest state a window sends (bytes of JSON; a tour step's is about 200).
LECTURE_SYNC_MAX_BODY = 4096
#: Requests a client may make a second on average (a window asks 2.5 times a second), at once,
#: and the clients a process counts (past it the longest idle are forgotten).
LECTURE_SYNC_RATE = 20
LECTURE_SYNC_BURST = 60
LECTURE_SYNC_MAX_CLIENTS = 10_000

# The hall's answers to a lecture's question (students' phones: bnviz.server.hall)
#: Taps a question keeps (one per phone; a hall of a few hundred, with room), the hours a
#: question left open is kept, and the seconds between two taps of one phone.
LECTURE_HALL_MAX_TAPS = 2000
LECTURE_HALL_QUESTION_HOURS = 2
LECTURE_HALL_TAP_SECONDS = 1.0
#: The largest body the hall takes (a tap is ~30 bytes of JSON, a question ~80).
LECTURE_HALL_MAX_BODY = 512
#: Requests an address may make a second on average, and at once, per web process: a hall
#: behind one NAT address is 200 phones, each tapping and asking for the question (a tap is
#: one short SQLite write; one phone's own taps are held to one a second apart from this).
LECTURE_HALL_RATE = 300
LECTURE_HALL_BURST = 600
