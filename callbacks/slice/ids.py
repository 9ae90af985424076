"""Component ids of the /slice page (slices of image networks).

The page's layout (layouts/slice.py) and its callbacks import these; importing this module
registers no callback."""

SOURCE = "slice-source"  # a job that kept networks
ARM = "slice-arm"  # the first network (BN)
OTHER = "slice-other"  # the network beside it ("" none)
IMAGES = "slice-images"  # "i,j,k"
RANDOM = "slice-random"
THUMBS = "slice-thumbs"
BN = "slice-bn"
BATCHES = "slice-batches"
EXTENT = "slice-extent"
COMPUTE = "slice-compute"
CANCEL = "slice-cancel"
PROGRESS = "slice-progress"
STATUS = "slice-status"
POLL = "slice-poll"
JOB = "slice-job"
RESULT = "slice-result"  # the finished slice job shown
MESSAGE = "slice-message"
# a window over the page's cap, as a slice job (cut as tiles on the job workers)
TILED_BOX = "slice-tiled-box"  # shown when the page's cut was refused over its cap
TILED_COMPUTE = "slice-tiled-compute"
TILED_CANCEL = "slice-tiled-cancel"
TILED_PROGRESS = "slice-tiled-progress"
TILED_STATUS = "slice-tiled-status"
TILED_POLL = "slice-tiled-poll"
TILED_JOB = "slice-tiled-job"
TILED_RESULT = "slice-tiled-result"
LAYER = "slice-layer"
GRAPH = "slice-graph"
HOVER = "slice-hover"  # the image under the mouse
REGION = "slice-region"  # the clicked region's code and distances
DENSITY = "slice-density"
NOTE = "slice-note"
UPLOAD = "slice-upload"  # an .onnx or .safetensors file
UPLOAD_ARCH = "slice-upload-arch"  # the architecture of a .safetensors upload
UPLOADS = "slice-uploads"  # the networks uploaded in this tab: [{"label", "value"}]
DATA = "slice-data"  # an upload's data set
EXPERIMENT_BOX = "slice-experiment-box"  # the stored concentration experiment, folded
EXPERIMENT = "slice-experiment"
EXPERIMENT_GRAPH = "slice-experiment-graph"  # every network's value, a dot each
# the map of a finished slice job (callbacks/slice/map.py; bnviz.slices.slice_map)
TABS = "slice-tabs"  # "cut": the page's own slice; "map": a slice job's map
MAP_SOURCE = "slice-map-source"  # a finished slice job
MAP_PART = "slice-map-part"  # its partition: "a<arm>-b<mini-batch>"
MAP_LAYER = "slice-map-layer"
MAP_GRAPH = "slice-map-graph"
MAP_NOTE = "slice-map-note"  # raster or exact, the regions in view
MAP_READY = "slice-map-ready"  # store: the tiles' key whose networks are open for a re-cut
MAP_ZOOM = "slice-map-zoom"  # store: the graph's last relayoutData that moved the view
MAP_VIEW = "slice-map-view"  # store: {job, rect, part, layer, exact}: what the graph shows
MAP_HOVER = "slice-map-hover"
MAP_REGION = "slice-map-region"
