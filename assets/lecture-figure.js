/* The lecture graph's figure (/lecture): the type size for big halls, the ghost of the
   partition from before mu or sigma moved, a click's marks, the next step prepared by the
   server (shown at once by a step key) and one draw per step. What it gives the other
   lecture scripts (window.bnvizLecture): setTypeScale, showPrefetched, prepared. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const set = (id, props) => window.dash_clientside.set_props(id, props);

    /* Each step is drawn once (issue 46): dash's Graph has plotly.js draw its figure again
       whenever the graph's box changes size, also when plotly.js drew the new figure at the
       new size already (the dock goes beside a square figure and under a wide one, and the
       box changes with the step's figure): 10 of 16 steps were drawn twice, 180-400 ms
       apart. A lecture graph drawn at its box's size (within 1 px, plotly.js's own rule for
       an autosize) is not drawn again; any other resize is plotly.js's as before. */
    function drawnAtItsSize(gd) {
        const svg = gd.querySelector(".main-svg");
        if (!svg) { return false; }
        const box = window.getComputedStyle(gd);
        return Math.abs(parseFloat(box.width) - svg.width.baseVal.value) <= 1 &&
            Math.abs(parseFloat(box.height) - svg.height.baseVal.value) <= 1;
    }
    let guarded = null;  /* the Plots.resize put in place */
    function drawOnce() {
        const plots = window.Plotly && window.Plotly.Plots;
        if (!plots || plots.resize === guarded) { return; }
        const resize = plots.resize;
        guarded = function (gd) {
            const el = typeof gd === "string" ? document.getElementById(gd) : gd;
            if (el && el.closest && el.closest("#" + IDS.ROOT) && drawnAtItsSize(el)) {
                return Promise.resolve(el);
            }
            return resize.apply(this, arguments);
        };
        plots.resize = guarded;
    }
    drawOnce();

    /* Type size for big halls (+ and -): the dock's type and every font of the figure, as
       a factor of the projector's CONFIG.typePx (never under it). */
    const TYPE_SCALES = CONFIG.typeScales;
    let typeScale = 1;
    function setTypeScale(step) {
        const i = Math.max(0, Math.min(TYPE_SCALES.length - 1,
                                       TYPE_SCALES.indexOf(typeScale) + step));
        typeScale = TYPE_SCALES[i];
        const root = document.getElementById(IDS.ROOT);
        if (root) { root.style.fontSize = (CONFIG.typePx * typeScale) + "px"; }
        set(IDS.TYPE_SCALE, {data: typeScale});
    }
    function scaledType(fig, s) {
        if (s === 1) { return fig; }
        const copy = JSON.parse(JSON.stringify({layout: fig.layout, data: fig.data}));
        const grow = (font) => {
            if (font && typeof font.size === "number") { font.size = Math.round(font.size * s); }
        };
        const walk = (o, depth) => {
            if (!o || typeof o !== "object" || depth > 4) { return; }
            for (const k of Object.keys(o)) {
                if (/font$/i.test(k)) { grow(o[k]); }
                else if (typeof o[k] === "object") { walk(o[k], depth + 1); }
            }
        };
        walk(copy.layout, 0);
        copy.data.forEach((t) => walk({marker: t.marker, colorbar: t.colorbar,
                                       textfont: t.textfont}, 0));
        return Object.assign({}, fig, {layout: copy.layout, data: copy.data});
    }

    /* The next step, prepared by the server while the lecturer talks (callbacks/lecture/
       prefetch.py): a step key shows it at once, and the server's answer for the same
       state (its meta.state) is not drawn again. */
    let prefetched = null;  /* the PREFETCH store's data */
    let shownKey = null;  /* "step|theme|split" of the state shown */
    function showPrefetched(step) {
        const pf = prefetched;
        if (!pf || pf.step !== step || pf.from !== shownKey) { return false; }
        drawOnce();
        /* the text and the dock's place first, so that the graph is drawn once, at its
           final size (drawn in the same update, plotly.js would draw at the old size, then
           again); then the figure straight to the graph (no callback between) */
        set(IDS.DRAWN, {data: pf.figure.layout.meta.state});  /* the server skips it */
        set(IDS.MAIN, {className: pf.main});
        set(IDS.TITLE, {children: pf.title});
        set(IDS.COUNTER, {children: pf.counter});
        set(IDS.CAPTION, {children: pf.caption});
        set(IDS.READOUT, {children: pf.readout});
        set(IDS.MESSAGE, {children: pf.note});
        set(IDS.INFO, {children: ""});
        window.requestAnimationFrame(function () {
            set(IDS.GRAPH, {figure: window.dash_clientside.lecture.withGhost(
                pf.figure, typeScale, null)});
        });
        return true;
    }

    const clientside = (window.dash_clientside = window.dash_clientside || {});
    clientside.lecture = Object.assign(clientside.lecture || {}, {
        /* The step, theme and split of the state shown, from its query; unchanged
           while only a slider moves (the next step is drawn at its own settings). */
        prefetchKey: function (query, last) {
            if (typeof query !== "string") { return window.dash_clientside.no_update; }
            const q = new URLSearchParams(query);
            const key = [q.get("step") || "1", q.get("theme") === "dark" ? "dark" : "light",
                         q.get("split") === "1" ? "1" : "0"].join("|");
            shownKey = key;
            return key === last ? window.dash_clientside.no_update : key;
        },
        keepPrefetch: function (pf) {
            prefetched = (pf && pf.figure) ? pf : null;
            return window.dash_clientside.no_update;
        },
        /* The server's figure, with a ghost of the partition from before mu or sigma
           started to move (dotted, faint, under the new lines) while only they move: the
           previous picture's ghost is kept, or its lines become the ghost. */
        withGhost: function (fig, scale, prev) {
            if (!fig || !fig.layout) { return window.dash_clientside.no_update; }
            drawOnce();
            scale = typeof scale === "number" ? scale : 1;
            const meta = fig.layout.meta || {};
            const prevMeta = (prev && prev.layout && prev.layout.meta) || {};
            /* the state already drawn (from the prefetch), at this type size */
            if (meta.state && meta.state === prevMeta.state && prevMeta.scale === scale &&
                    !meta.ghost) {
                return window.dash_clientside.no_update;
            }
            fig = scaledType(fig, scale);
            fig = Object.assign({}, fig, {layout: Object.assign({}, fig.layout, {
                meta: Object.assign({}, meta, {scale: scale})})});
            if (!meta.ghost || !prev || prevMeta.key !== meta.key) { return fig; }
            let ghosts = prev.data.filter(t => t.meta === "ghost");
            if (!ghosts.length) {
                ghosts = prev.data.filter(t => t.mode === "lines").map((t, i) =>
                    Object.assign({}, t, {
                        meta: "ghost", name: "before μ, σ moved", showlegend: i === 0,
                        legendrank: 2000, hoverinfo: "skip", opacity: 0.45,
                        line: Object.assign({}, t.line, {
                            dash: "dot", width: Math.max(1.5, (t.line && t.line.width || 2))
                        }),
                    }));
            }
            /* scatter traces draw in order, above the region fill: ghosts first */
            return Object.assign({}, fig, {data: ghosts.concat(fig.data)});
        },
        /* A click's marks on the plot (callbacks.lecture.callbacks.click_mark): the
           point and its nearest folded hyperplane, over the figure; the last click's
           marks go. */
        mark: function (mark, fig) {
            if (!fig || !fig.data) { return window.dash_clientside.no_update; }
            const data = fig.data.filter(t => t.meta !== "mark");
            if (mark && mark.point) {
                data.push({type: "scatter", mode: "lines", x: mark.x, y: mark.y,
                           xaxis: mark.xaxis, yaxis: mark.yaxis, meta: "mark",
                           name: mark.name, hoverinfo: "skip", showlegend: true,
                           line: {color: "#cc79a7", width: 7}});
                data.push({type: "scatter", mode: "markers", x: [mark.point[0]],
                           y: [mark.point[1]], xaxis: mark.xaxis, yaxis: mark.yaxis,
                           meta: "mark", name: "clicked point", hoverinfo: "skip",
                           showlegend: true, marker: {symbol: "x-thin-open", size: 22,
                           color: "#cc79a7", line: {width: 4, color: "#cc79a7"}}});
            }
            return Object.assign({}, fig, {data: data});
        },
    });
    /* prepared: the step prepared for the next key (tests) */
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {
        setTypeScale: setTypeScale, showPrefetched: showPrefetched,
        prepared: () => prefetched && prefetched.from === shownKey ? prefetched.step : null});
})();
