/* Clicks at the cursor (issue 16): a click in the explorer's or the lecture view's partition
   reports the data coordinates under the mouse, not the nearest data point's or the region
   fill's pixel centre. The graph's plotly_click carries the mouse event; the clicked panel's
   plot area (plotly.js's drag rectangle of that subplot, a DOM element named by its
   data-subplot) and the axis's p2d turn the mouse's position into coordinates, which go to
   the page's cursor store. Only plotly.js's public API: gd.on, the event's points (their
   fullData's axes) and the axis's p2d, gd.removeListener; no private field, no timer. */
(function () {
    const GRAPHS = window.bnvizConfig.cursor;  /* graph id -> its cursor store's id */
    const handlers = new WeakMap();

    function handler(gd, storeId) {
        return function (data) {
            const pt = data && data.points && data.points[0];
            const e = data && data.event;
            if (!pt || !e || !pt.xaxis || !pt.yaxis || !pt.fullData) { return; }
            const xName = pt.fullData.xaxis || "x", yName = pt.fullData.yaxis || "y";
            const area = gd.querySelector('.nsewdrag[data-subplot="' + xName + yName + '"]');
            if (!area) { return; }
            const r = area.getBoundingClientRect();
            const px = e.clientX - r.left, py = e.clientY - r.top;
            if (px < 0 || py < 0 || px > r.width || py > r.height) { return; }
            window.dash_clientside.set_props(storeId, {data: {
                points: [{x: pt.xaxis.p2d(px), y: pt.yaxis.p2d(py)}], panel: xName,
                t: Date.now()}});
        };
    }

    /* The handler goes on each graph's div when the page changes (a new div, or plotly.js
       having purged the old one's listeners): taken off first, so it is there once. */
    function attach() {
        for (const [graphId, storeId] of Object.entries(GRAPHS)) {
            const gd = document.querySelector("#" + graphId + " .js-plotly-plot");
            if (!gd || !gd.on || !gd.removeListener) { continue; }
            let h = handlers.get(gd);
            if (!h) { h = handler(gd, storeId); handlers.set(gd, h); }
            gd.removeListener("plotly_click", h);
            gd.on("plotly_click", h);
        }
    }
    new MutationObserver(attach).observe(document.documentElement,
                                         {childList: true, subtree: true});
    attach();
})();
