/* bnviz client-side callbacks: URL state and figure export (no server round trip). */

/* Pages keep their state across navigation (issue 16): a page whose state is its URL query
   (the explorer) has its last query kept per browser tab, and a navbar link back to it opens
   it there; the other pages' controls keep theirs with Dash's persistence. */
function rememberSearch() {
    try {
        window.sessionStorage.setItem("bnviz:search:" + window.location.pathname,
                                      window.location.search);
    } catch (e) { /* storage disabled: links open the page's defaults */ }
}
document.addEventListener("click", function (e) {
    const a = e.target && e.target.closest && e.target.closest(".navbar a.nav-link");
    if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) { return; }
    const to = new URL(a.href, window.location.href);
    let kept = null;
    try { kept = window.sessionStorage.getItem("bnviz:search:" + to.pathname); } catch (e) {}
    if (to.search || !kept || to.origin !== window.location.origin) { return; }
    rememberSearch();
    e.preventDefault();
    e.stopPropagation();
    /* Dash's location component follows the browser's history: a popstate after the push
       (the public event; no private one of Dash's) */
    window.history.pushState({}, "", to.pathname + kept);
    window.dispatchEvent(new PopStateEvent("popstate", {state: {}}));
    window.scrollTo(0, 0);
}, true);
window.dash_clientside = Object.assign({}, window.dash_clientside, {
    bnviz: {
        /* Write the page state into the URL without reloading (history.replaceState is seen
           by no dcc.Location, so Dash Pages does not re-render the page). */
        replaceUrl: function (query) {
            const noUpdate = window.dash_clientside.no_update;
            if (typeof query !== "string") { return noUpdate; }
            const url = window.location.pathname + (query ? "?" + query : "");
            if (url !== window.location.pathname + window.location.search) {
                window.history.replaceState(window.history.state, "", url);
            }
            rememberSearch();
            return noUpdate;
        },
        /* PNG or SVG export of the graph whose button was pressed. */
        exportFigure: function (clicks) {
            const noUpdate = window.dash_clientside.no_update;
            const ctx = window.dash_clientside.callback_context;
            const trig = ctx && ctx.triggered_id;
            if (!trig || !clicks || !clicks.some(Boolean)) { return noUpdate; }
            const gd = document.querySelector("#" + trig.graph + " .js-plotly-plot");
            if (gd && window.Plotly) {
                window.Plotly.downloadImage(gd, {
                    format: trig.format, filename: "bnviz-" + trig.graph,
                    width: gd.offsetWidth, height: gd.offsetHeight, scale: 2,
                });
            }
            return noUpdate;
        },
    },
});

/* Tooltip of the sigma slider, whose value is log2 of the factor s. */
window.dccFunctions = window.dccFunctions || {};
window.dccFunctions.sigmaFactor = function (value) {
    return "s = " + Math.pow(2, value).toFixed(2);
};
