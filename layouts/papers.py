"""Layout of the debate page: the claims panel, where the papers disagree, and the views."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dash_table, dcc, html

import bnviz.web.callbacks.papers.callbacks  # noqa: F401  (registers the page's callbacks)
from bnviz.web.callbacks.papers import ids
from bnviz.web.callbacks.papers.content import DJ_EXAMPLE, ERGEN_DATASETS, math_text
from bnviz.web.layouts.common import KEPT, PERSIST, graph, labelled_row, loading, number_input

#: Each disagreement in two or three sentences (Markdown, math as inline TeX: the page renders
#: it with MathJax), with where the page (or the dashboard) shows it. They say what a paper
#: claims as its claim, and what our runs show only as the entries of DISAGREEMENT_ENTRIES,
#: whose stored statuses the page prints beside them (tests/test_words.py).
DISAGREEMENTS = [
    ("Does BN give a better initialisation?",
     "Santurkar et al.'s Lemma 4.5 says the nearest BN optimum is at least as close to any "
     "initialisation as a standard optimum is. Dannemann & Junike's three-point example "
     "(one linear neuron) refutes that lemma: at $W_0 = W^*$ the BN loss still has a "
     "gradient, and the BN optima lie 4.24 away (squared distance). A counterexample to the "
     "lemma does not say whether starting from BN's statistics helps training; our "
     "smart-initialisation runs test that.",
     "#dannemann", "the weight plane below"),
    ("How tight is Santurkar et al.'s gradient bound?",
     r"Theorem 4.1 is printed as an inequality with $1/\sqrt{m}$. With BN's biased $\sigma$ "
     "the statement is an equality with $1/m$, and the printed bound is violated (it can be "
     "negative).",
     "#claims", "claims santurkar-thm41 and santurkar-thm41-as-printed"),
    ("Is BN's mean a fit to the data or an optimisation device?",
     r"The BN paper proves that $\mu$ is the total-least-squares fit of each layer's "
     "hyperplanes to the batch (Theorem 1, exact: our claims check it), and claims that BN "
     "thereby moves the partition onto the data. Whether a trained image network's partition "
     "ends up concentrated on real images is what our slice entry tests: on 5 digits networks "
     "an arm, our runs did not find it (BN's regions are no denser about test images, against "
     "images off the data, than random bias's or BN's scale alone's). Santurkar et al. "
     "explain BN by a smoother loss landscape and find no "
     "reduction of internal covariate shift.",
     "#santurkar", "the landscape and ICS view below"),
    ("Is mini-batch noise a regulariser?",
     r"Luo et al. write BN as population normalisation plus $\gamma$ decay of strength "
     "$3/(4M)$ for a linear unit; that is a leading-order result (the exact gap at $M = 16$ "
     "is 1.9 % larger). The BN paper instead shows the noise as jitter of the decision "
     "boundary, and adds noise on purpose to gain accuracy.",
     "#luo", "the regularisation view below, and the jitter page (Figures 6, 7)"),
    ("What do BN's γ and β mean?",
     r"Ergen et al. normalise by the $\ell_2$ norm over the batch, not the standard "
     r"deviation, so their $\gamma$ is $\sqrt{n}$ times a usual BN $\gamma$. The BN paper "
     r"fixes $\gamma = 1$, $\beta = 0$ for its geometry and measures the learnable ones in an "
     "ablation (Table 1).",
     "#ergen", "the convex view below, and the affine-ablation job"),
]


def _claims_section() -> html.Div:
    return html.Div(id="claims", children=[
        html.H5("Claims, checked now", className="mt-3"),
        html.P(["Each closed-form statement is recomputed independently (autograd, Monte "
                "Carlo, a numerical minimiser, the exact partition) when the page first "
                "loads; the same table is ", html.Code("python -m bnviz claims --json"), "."],
               className="small text-muted"),
        dcc.Store(id=ids.CLAIMS_REQUEST, data="all"),
        loading(html.Div(id=ids.CLAIMS)),
    ])


#: The replication report's entries behind each disagreement (in DISAGREEMENTS' order).
DISAGREEMENT_ENTRIES = (
    ("dannemann-lemma45", "bn-fig5-10-smart-init"),
    ("santurkar-thm41", "santurkar-thm41-as-printed"),
    ("bn-thm1-tls-minimiser", "bn-slice-concentration", "santurkar-smoothness",
     "santurkar-ics"),
    ("luo-gamma-decay-gap", "bn-sec5-noise"),
    ("ergen-closed-form", "bn-table1-affine"),
)


def _our_runs(entries: tuple[str, ...], outcomes: dict) -> list:
    """"Our runs:" and each entry's stored status, linked to its row of the report."""
    found = [(e, outcomes[e]["status"]) for e in entries if e in outcomes]
    if not found:
        return []
    parts: list = [html.I(" Our runs: ")]
    for i, (entry, status) in enumerate(found):
        parts += [", " if i else "", html.A(entry, href=f"/papers/replication#entry-{entry}"),
                  f" {status}"]
    return parts + ["."]


def _disagreements_section(outcomes: dict) -> html.Div:
    """Each disagreement: its title and what our runs found, then its two sentences (their
    math typeset) and the link to where the page shows it."""
    items = [html.Li([html.B(title), *_our_runs(entries, outcomes),
                      math_text(f"{text} [See {where}.]({href})", className="disagreement")],
                     className="mb-2")
             for (title, text, href, where), entries in zip(DISAGREEMENTS,
                                                             DISAGREEMENT_ENTRIES, strict=True)]
    return html.Div([html.H5("Where they disagree", className="mt-4"),
                     html.Ul(items, className="small")])




def _view(anchor: str, title: str, controls, message_id: str, body: list) -> html.Div:
    """One paper's view: its title, controls on the left, a message line and the pictures
    on the right; ``anchor`` is the id the disagreement panel links to."""
    return html.Div(id=anchor, children=[
        html.H5(title, className="mt-4"),
        dbc.Row([
            dbc.Col(controls, lg=3),
            dbc.Col([dbc.Alert(id=message_id, color="warning", is_open=False,
                               className="py-2 mt-2 mb-1"), *body], lg=9),
        ]),
    ])


def _dannemann_section() -> html.Div:
    controls = dbc.Card(dbc.CardBody([
        html.H6("Data (one neuron, identity activation, no bias)", className="text-muted"),
        dash_table.DataTable(
            id=ids.DJ_POINTS, data=DJ_EXAMPLE, editable=True, row_deletable=True,
            columns=[{"name": n, "id": n, "type": "numeric"} for n in ("x1", "x2", "y")],
            style_cell={"fontSize": "0.8rem", "padding": "2px 6px"}),
        dbc.ButtonGroup([
            dbc.Button("add a point", id=ids.DJ_ADD, size="sm", outline=True),
            dbc.Button("Example 3.2", id=ids.DJ_RESET, size="sm", outline=True)],
            className="my-2"),
        graph(ids.DJ_DATA, "200px", displayModeBar=False, edits={"shapePosition": True}),
        html.Div("drag a point to move its input (x1, x2)", className="small text-muted"),
        html.H6("Initialisation W0 (drag it, or click the plane)",
                className="text-muted mt-2"),
        labelled_row("w1", number_input(ids.DJ_W01, 1.0, -100, 100, "any")),
        labelled_row("w2", number_input(ids.DJ_W02, 3.0, -100, 100, "any")),
        html.H6("BN", className="text-muted mt-2"),
        dbc.RadioItems(id=ids.DJ_SIGMA, **PERSIST, value="biased", inline=True, className="small",
                       options=[{"label": "biased σ (÷M)", "value": "biased"},
                                {"label": "unbiased σ (÷(M−1))", "value": "unbiased"}]),
        dbc.Switch(id=ids.DJ_AFFINE, **PERSIST, value=False, className="small",
                   label="learnable γ, β (set to their optimum)"),
    ]), className="mt-2")
    return _view("dannemann", "Dannemann & Junike: a counterexample to Santurkar et al.'s "
                 "Lemma 4.5",
                 controls, ids.DJ_MESSAGE, [
                     graph(ids.DJ_GRAPH, "62vh", edits={"shapePosition": True}),
                     html.Div(id=ids.DJ_NUMBERS, className="small")])


def _santurkar_section() -> html.Div:
    controls = dbc.Card(dbc.CardBody([
        html.H6("Network (ReLU, 2D moons) and SGD", className="text-muted"),
        labelled_row("depth", number_input(ids.SL_DEPTH, 3, 1, 8)),
        labelled_row("width", number_input(ids.SL_WIDTH, 16, 2, 64)),
        labelled_row("steps", number_input(ids.SL_STEPS, 200, 1, 2000)),
        labelled_row("learning rate", number_input(ids.SL_LR, 0.1, 0.0001, 2, "any")),
        dbc.Switch(id=ids.SL_NOISY, **PERSIST, value=False, className="small",
                   label="noisy BN (Algorithm 1: n_μ 0.5, n_σ 1.25, r_μ 0.1, r_σ 0.1)"),
        dbc.Button("train with and without BN", id=ids.SL_TRAIN, size="sm", color="primary",
                   className="my-2"),
        dbc.Progress(id=ids.SL_PROGRESS, value=0, className="mb-1", style={"height": "18px"}),
        html.Div(id=ids.SL_STATUS, className="small text-muted"),
        dcc.Interval(id=ids.SL_POLL, interval=500, disabled=True),
        dcc.Store(id=ids.SL_JOB, **KEPT),
        dcc.Store(id=ids.SL_RESULT, **KEPT),
    ]), className="mt-2")
    return _view("santurkar", "Santurkar et al.: the loss landscape and internal covariate "
                 "shift", controls, ids.SL_MESSAGE, [
                     graph(ids.SL_LANDSCAPE, "52vh"), graph(ids.SL_ICS, "30vh"),
                     graph(ids.SL_BOUNDARY, "32vh"),
                html.P("At every SGD step, on that step's mini-batch: the range of the loss "
                       "and of the gradient change ‖g − ∇L(θ − ηg)‖ over step sizes η in "
                       "[0.5, 4] × lr (section 3.1), and the effective β-smoothness, the "
                       "largest gradient change per distance moved. ICS (Definition 2.1): "
                       "how much a layer's gradient changes when the layers below it take "
                       "their update first (ℓ2 difference and cosine). Both networks start "
                       "from the same weights; the decision maps use the statistics of all "
                       "the data for BN.", className="small explain"),
                 ])


def _luo_section() -> html.Div:
    controls = dbc.Card(dbc.CardBody([
        html.H6("Batch statistics", className="text-muted"),
        labelled_row("pre-activation", dbc.Select(id=ids.LUO_DIST, **PERSIST, value="exponential",
                                                  size="sm", options=[
            {"label": n, "value": n} for n in ("gaussian", "exponential", "uniform")])),
        labelled_row("batch size M", dbc.Select(id=ids.LUO_BATCH, **PERSIST, value="16", size="sm",
                                                options=[{"label": str(m), "value": str(m)}
                                                         for m in (4, 8, 16, 32, 64, 128,
                                                                   256)])),
        html.H6("Learning dynamics (teacher-student ReLU)", className="text-muted mt-2"),
        labelled_row("η (learning rate)", dcc.Slider(id=ids.LUO_ETA, min=0.1, max=6, step=0.1,
                                                     value=1.0, marks=None,
                                                     tooltip={"placement": "bottom"},
                                                     **PERSIST)),
        labelled_row("ζ (gamma decay)", dcc.Slider(id=ids.LUO_ZETA, **PERSIST, min=0, max=1,
                                                   step=0.01, value=0.25, marks=None,
                                                   tooltip={"placement": "bottom"})),
        dbc.Switch(id=ids.LUO_I2, **PERSIST, value=False, className="small",
                   label="use I2 as printed (π R: a typo)"),
        html.H6("BN vs population normalisation", className="text-muted mt-2"),
        dbc.Button("train BN, PN and PN + γ decay (batch M above)", id=ids.LUO_TRAIN,
                   size="sm", color="primary", className="my-1"),
    ]), className="mt-2")
    return _view("luo", "Luo et al.: BN = population normalisation + gamma decay", controls,
                 ids.LUO_MESSAGE, [
                     graph(ids.LUO_STATS, "30vh"),
                     dbc.Row([dbc.Col(graph(ids.LUO_GAP, "30vh"), md=5),
                              dbc.Col(graph(ids.LUO_DYNAMICS, "30vh"), md=7)]),
                     html.Div(id=ids.LUO_NUMBERS, className="small"),
                     graph(ids.LUO_COMPARE, "30vh"),
                     html.Div(id=ids.LUO_COMPARE_NUMBERS, className="small"),
                math_text(r"Top: $\mu_B$ and $\sigma_B$ over 20,000 batches of $M$ draws, "
                          r"against the Gaussian model $\mathcal{N}(\mu_P, \sigma_P^2/M)$ and "
                          r"$\mathcal{N}(\sigma_P, \sigma_P^2(\rho+2)/(4M))$, $\rho$ the excess "
                          r"kurtosis (dashed: the printed variance without $\sigma_P^2$). Left: "
                          "the excess of BN's loss over population normalisation for a linear "
                          r"unit, $\mathbb{E}_B[(\gamma h - \gamma\,\mathrm{BN}_B(h))^2/2]$, "
                          r"against $\zeta\gamma^2$ with $\zeta = 3/(4M)$. Right: eq. 6 "
                          r"integrated (`solve_ivp`) from $\gamma = 0.5$, $R = 0.1$, $L = 1$; "
                          r"BN's fixed point is $\gamma_0 = 1/(1+2\zeta)$, stable for "
                          r"$\eta_{\mathrm{eff}}$ below $2(1+2\zeta)$.",
                          className="small explain"),
                 ])


def _ergen_section() -> html.Div:
    controls = dbc.Card(dbc.CardBody([
        html.H6("Data (one class per label)", className="text-muted"),
        labelled_row("data set", dbc.Select(id=ids.EG_DATASET, **PERSIST, value="blobs", size="sm",
                                            options=[{"label": d, "value": d} for d in
                                                     ERGEN_DATASETS])),
        labelled_row("points", number_input(ids.EG_N, 24, 4, 60)),
        labelled_row("β (regularisation)", number_input(ids.EG_BETA, 0.7, 0.01, 10, "any")),
        html.P("Their BN divides by the ℓ2 norm over the n samples, not the standard "
               "deviation: ‖Ph‖ = √n std(h), so their γ and α are √n times a usual BN's.",
               className="small text-muted mt-2"),
    ]), className="mt-2")
    return _view("ergen", "Ergen et al.: BN as whitening, and a closed-form last layer",
                 controls, ids.EG_MESSAGE, [
                     dbc.Row([dbc.Col(graph(ids.EG_WHITEN, "32vh"), md=6),
                              dbc.Col(graph(ids.EG_UNITS, "32vh"), md=6)]),
                     html.Div(id=ids.EG_NUMBERS, className="small"),
                html.P("Left: the centred data X and its whitened U (X = UΣVᵀ): a BN layer "
                       "after a linear layer sees only U. Right: each trained unit's "
                       "normalised (|γ|, α) (dots, by the class it serves) against the "
                       "closed form γ* = ‖y − ȳ‖/‖y‖, α* = 1ᵀy/(√n‖y‖) (crosses). The network: "
                       "a fixed random ReLU lift of width 4n, then Ergen's BN, ReLU and a "
                       "linear layer, trained on 0.5‖F − Y‖² + β/2(γ² + α² + ‖W‖²).",
                       className="small explain"),
                 ])


def stored_outcomes() -> tuple[dict, str | None]:
    """The replication report's stored outcomes, and what was wrong reading them (or None)."""
    from bnviz.replication.store import OutcomesError, read_outcomes

    try:
        return read_outcomes(), None
    except OutcomesError as exc:
        return {}, str(exc)


def replication_link(outcomes: dict, problem: str | None = None) -> dbc.Alert:
    """What our runs reproduce, counted from the stored outcomes, and the way to the table."""
    from bnviz.replication.report import report, summary_line

    line = problem or summary_line(report(outcomes))
    return dbc.Alert([html.B("What reproduces? "), f"{line}. ",
                      html.A("See the replication report: every result of the five papers "
                             "beside our runs.", href="/papers/replication",
                             id=ids.REPLICATION_LINK)],
                     color="info", className="py-2 small")


def layout(**_query) -> dbc.Container:
    """The page (Dash Pages passes the URL's query; this page keeps no state there)."""
    outcomes, problem = stored_outcomes()
    return dbc.Container(fluid=True, children=[
        html.P("The BN paper explains batch normalization by the geometry of the partition. "
               "Four other papers explain it differently or dispute its claims; each is shown "
               "here with its own numbers, checked.", className="mt-2"),
        replication_link(outcomes, problem),
        _disagreements_section(outcomes),
        _claims_section(),
        _dannemann_section(),
        _santurkar_section(),
        _luo_section(),
        _ergen_section(),
    ])


#: The page (layouts.registry registers it).
PAGES = ({"path": "/papers", "name": "The debate (4 papers)", "order": 5, "layout": layout,
          "lecture_step": "dannemann"},)
