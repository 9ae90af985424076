/* Clicks at the cursor (issue 16): a click in the explorer's or the lecture view's partition
   reports the data coordinates under the mouse, not the nearest data point's or the region
   fill's pixel centre. The graph's plotly_click carries the mouse event; the clicked panel's
   axes turn its pixel position into coordinates, which go to the page's cursor store. */
(function () {
    const GRAPHS = {"explorer-graph": "explorer-cursor", "lecture-graph": "lecture-cursor"};
    const handlers = new WeakMap();

    function handler(gd, storeId) {
        return function (data) {
            const pt = data && data.points && data.points[0];
            const e = data && data.event;
            if (!pt || !e || !pt.xaxis || !pt.yaxis) { return; }
            const xa = pt.xaxis, ya = pt.yaxis;
            const r = gd.getBoundingClientRect();
            const px = e.clientX - r.left - xa._offset, py = e.clientY - r.top - ya._offset;
            if (px < 0 || py < 0 || px > xa._length || py > ya._length) { return; }
            window.dash_clientside.set_props(storeId, {data: {
                points: [{x: xa.p2d(px), y: ya.p2d(py)}], panel: xa._id, t: Date.now()}});
        };
    }

    function attach() {
        for (const [graphId, storeId] of Object.entries(GRAPHS)) {
            const gd = document.querySelector("#" + graphId + " .js-plotly-plot");
            if (!gd || !gd.on || !gd._ev) { continue; }
            let h = handlers.get(gd);
            if (!h) { h = handler(gd, storeId); handlers.set(gd, h); }
            if (!gd._ev.listeners("plotly_click").includes(h)) { gd.on("plotly_click", h); }
        }
    }
    setInterval(attach, 300);
})();
