/* Type that grows and reflows in the lecture view (issue 46): at a large type size (+, up to
   x1.75 for the back row) no text is cut, off screen or printed over another.
   - c folds the caption to one line, and shows it in full again (a mode for every step, in
     this window only).
   - The figure makes room for its grown type (its fonts grow in lecture-figure.js, on a
     figure laid out for 18 px): its margins and the gaps between its panels grow with the
     type and its panels shrink; a legend that would take a narrow figure's width goes under
     it; a panel's or an axis' title wider than its panel takes two lines; an axis has no
     more ticks than its labels have room for. At x1.75 a figure had its panel titles over
     the header and its axis titles on the next panel's tick labels.
   - What still clashes once drawn (texts over one another, or out of the figure) is drawn
     again one type size smaller, down to x1 at the least: the last resort, on a figure too
     crowded for its screen.
   The page (the header, the dock's width) grows with the type in lecture.css. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const FOLDED = "lecture-captions-folded";  /* on <body>: Dash does not render its class */
    /* DejaVu Sans, the projector's font: a character is at most about 0.6 em wide */
    const EM_PER_CHAR = 0.6;
    /* The share of their room the panels keep when the gaps grow for the type: a figure
       whose texts need more is drawn at a smaller type (refit), not as slivers of data */
    const PANELS_KEEP = 0.65;

    /* c: the caption on one line or in full. The lecture's own keys (lecture.js) come first:
       a key it took (defaultPrevented: a blank screen brought back) or an open panel's
       keys are not ours. */
    document.addEventListener("keydown", function (e) {
        if (e.key !== "c" || e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) { return; }
        if (!document.getElementById(IDS.ROOT) || document.querySelector(".modal.show")) {
            return;
        }
        const tag = (e.target && e.target.tagName) || "";
        if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
        document.body.classList.toggle(FOLDED);
        e.preventDefault();
    });

    const plain = (text) => String(text || "").replace(/<br>/g, "\n").replace(/<[^>]+>/g, "");
    const widest = (text) => Math.max(0, ...plain(text).split("\n").map(line => line.length));
    /* ``text`` on two lines, broken at the space nearest its middle (as it was without one) */
    function twoLines(text) {
        if (typeof text !== "string" || text.indexOf("<br>") >= 0) { return text; }
        let at = -1;
        for (let i = 0; i < text.length; i++) {
            if (text[i] === " " && (at < 0 || Math.abs(i - text.length / 2) <
                                    Math.abs(at - text.length / 2))) { at = i; }
        }
        return at < 0 ? text : text.slice(0, at) + "<br>" + text.slice(at + 1);
    }

    /* A figure's positions along one side of the page (x or y, 0..1) mapped so that each gap
       between its panels (and before the first, after the last) is at least ``factor`` times
       what it was and at least what ``need`` asks for it (need(low, high): a fraction), the
       panels sharing what is left (at least PANELS_KEEP of what they had). ``spans``: the
       panels' domains. A function of a position, or null (no panels). */
    function gapMap(spans, factor, need) {
        const sorted = spans.filter(d => Array.isArray(d) && d.length === 2)
            .map(d => [Math.max(0, Math.min(d[0], d[1])), Math.min(1, Math.max(d[0], d[1]))])
            .sort((a, b) => a[0] - b[0]);
        const panels = [];  /* the union of the domains: what panels cover */
        for (const d of sorted) {
            const last = panels[panels.length - 1];
            if (last && d[0] <= last[1] + 1e-9) { last[1] = Math.max(last[1], d[1]); }
            else { panels.push([d[0], d[1]]); }
        }
        if (!panels.length) { return null; }
        const edges = [0].concat(...panels, [1]);
        const wanted = [];
        let covered = 0;
        for (let i = 0; i < edges.length; i += 2) {
            const gap = edges[i + 1] - edges[i];
            wanted.push(Math.max(gap * factor, need(edges[i], edges[i + 1])));
            covered += edges[i + 2] !== undefined ? edges[i + 2] - edges[i + 1] : 0;
        }
        let gaps = wanted.reduce((a, b) => a + b, 0);
        if (covered <= 0) { return null; }
        const kept = covered * PANELS_KEEP;
        if (gaps > 1 - kept) {  /* the panels keep most of their room */
            const cut = (1 - kept) / gaps;
            for (let i = 0; i < wanted.length; i++) { wanted[i] *= cut; }
            gaps = 1 - kept;
        }
        const shrink = (1 - gaps) / covered;
        const to = [0];
        for (let i = 1; i < edges.length; i++) {
            to.push(to[i - 1] + ((i - 1) % 2 === 0 ? wanted[(i - 1) / 2]
                                                    : (edges[i] - edges[i - 1]) * shrink));
        }
        return function (p) {
            if (typeof p !== "number" || p < 0 || p > 1) { return p; }
            let i = 1;
            while (i < edges.length - 1 && p > edges[i]) { i++; }
            const w = edges[i] - edges[i - 1];
            return to[i - 1] + (w > 0 ? (p - edges[i - 1]) / w : 0) * (to[i] - to[i - 1]);
        };
    }

    const lines = (text) => plain(text).split("\n").length;
    const near = (a, b) => Math.abs(a - b) < 0.02;

    /* What the functions below read of a figure being given room (its copies: they change
       them): its layout and traces, its axes, annotations and colour bars, and a font's
       size (inherited from the layout's). */
    function parts(layout, data, scale) {
        const f = {layout: layout, data: data, notes: layout.annotations || [], bars: []};
        f.size = (font) => (font && font.size) || (layout.font && layout.font.size) ||
            CONFIG.typePx * scale;
        f.axes = (letter) => Object.keys(layout).filter(
            k => new RegExp("^" + letter + "axis\\d*$").test(k) && layout[k] &&
                typeof layout[k] === "object");
        f.domain = (k) => (layout[k] && layout[k].domain) || [0, 1];
        f.title = (axis) => axis.title && typeof axis.title === "object" &&
            axis.title.text ? axis.title : null;
        /* where an annotation stands on the page's height (null: on a data axis) */
        f.top = (a) => {
            const own = /^y(\d*) domain$/.exec(a.yref || "");
            const d = own ? f.domain("yaxis" + own[1]) : null;
            return d ? d[0] + (a.y || 0) * (d[1] - d[0]) :
                ((a.yref || "paper") === "paper" ? a.y : null);
        };
        f.height = (text, font) => lines(text) * 1.3 * f.size(font);
        data.forEach(t => [t.colorbar, t.marker && t.marker.colorbar]
            .forEach(b => { if (b && typeof b === "object") { f.bars.push(b); } }));
        return f;
    }

    /* Panels' and axes' titles wider than their panel take two lines; a panel's title keeps
       clear of the top tick label (which reaches over the panel's top) and is centred on
       its panel (plotly's "auto" anchors a text on the page left of x in its left third and
       right of it in its right third). */
    function foldTitles(f, box, side) {
        const xSpan = (ref, x) => {
            const own = /^x(\d*) domain$/.exec(ref || "");
            if (own) { return f.domain("xaxis" + own[1]); }
            return f.axes("x").map(f.domain).find(d => d[0] <= x && x <= d[1]);
        };
        for (const a of f.notes) {
            const span = xSpan(a.xref || "paper", a.x);
            if (span && typeof a.text === "string" && widest(a.text) * EM_PER_CHAR *
                    f.size(a.font) > 0.9 * (span[1] - span[0]) * box.width) {
                a.text = twoLines(a.text);
            }
            if (a.yanchor === "bottom") {
                if (!a.yshift) { a.yshift = Math.round(0.3 * f.size(a.font)); }
                if (span && (!a.xanchor || a.xanchor === "auto")) { a.xanchor = "center"; }
            }
        }
        for (const letter of ["x", "y"]) {
            for (const k of f.axes(letter)) {
                const title = f.title(f.layout[k]);
                const px = (f.domain(k)[1] - f.domain(k)[0]) * side[letter];
                if (title && widest(title.text) * EM_PER_CHAR * f.size(title.font) > px) {
                    title.text = twoLines(title.text);
                }
            }
        }
    }

    /* What each gap between panels must hold, as [edge, px, where]: px the gap before the
       edge (left, below), after it (right, above) or around it needs. Across: the right
       panel's y tick labels and title, a colour bar; down: the upper panel's x tick labels
       and title, the lower panel's titles over it. */
    function gapNeeds(f) {
        const other = {x: "y", y: "x"};
        const anchored = (axis, letter) => f.domain(other[letter] + "axis" +
            String(axis.anchor || other[letter]).slice(1));
        const needs = {x: [], y: []};
        const ticks = {x: (font) => 4 * EM_PER_CHAR * f.size(font) + 8,
                       y: (font) => 1.5 * f.size(font) + 8};
        for (const letter of ["y", "x"]) {
            for (const k of f.axes(letter)) {
                const axis = f.layout[k], title = f.title(axis);
                needs[other[letter]].push([anchored(axis, letter)[0],
                    (axis.showticklabels === false ? 0 : ticks[other[letter]](axis.tickfont)) +
                    (title ? f.height(title.text, title.font) + 8 : 0), "before"]);
            }
        }
        for (const a of f.notes) {
            const y = f.top(a);
            if (a.yanchor === "bottom" && typeof y === "number") {
                needs.y.push([y, f.height(a.text, a.font) + (a.yshift || 0) + 4, "after"]);
            }
        }
        for (const b of f.bars) {
            if (typeof b.x === "number" && (b.xref || "paper") === "paper") {
                const title = b.title && b.title.text ? b.title : null;
                needs.x.push([b.x, (b.thickness || 30) + ticks.x(b.tickfont) + 4 +
                              (title ? f.height(title.text, title.font) : 0), "around"]);
            }
        }
        return needs;
    }

    /* The gaps between the panels grown (gapMap) to ``scale`` times theirs and to what they
       must hold; the panels, the texts on the page and the colour bars moved with them. The
       outer gaps are the margins': plotly grows them for tick labels, topMargin for the top
       panels' titles. */
    function moveApart(f, scale, side) {
        const needs = gapNeeds(f);
        const need = (letter) => (low, high) => {
            if (low <= 0 || high >= 1) { return 0; }
            let px = 0;
            for (const [edge, want, where] of needs[letter]) {
                if ((where === "before" && near(edge, high)) ||
                        (where === "after" && near(edge, low)) ||
                        (where === "around" && low - 0.01 <= edge && edge <= high + 0.01)) {
                    px += want;
                }
            }
            return px / side[letter];
        };
        for (const letter of ["x", "y"]) {
            const map = gapMap(f.axes(letter).map(f.domain), scale, need(letter));
            if (!map) { continue; }
            const ref = letter + "ref";
            f.axes(letter).forEach(k => {
                if (Array.isArray(f.layout[k].domain)) {
                    f.layout[k].domain = f.layout[k].domain.map(map);
                }
            });
            f.notes.concat(f.layout.images || [], f.bars)
                .filter(a => (a[ref] || "paper") === "paper")
                .forEach(a => { a[letter] = map(a[letter]); });
        }
    }

    /* The top margin: what the titles over the top panels need beyond the gap above them. */
    function topMargin(f, margin, side) {
        const ceiling = Math.max(...f.axes("y").map(k => f.domain(k)[1]));
        const top = Math.max(0, ...f.notes.filter(a => a.yanchor === "bottom").map(a => {
            const y = f.top(a);
            return typeof y === "number" && y >= ceiling - 0.01 ? f.height(a.text, a.font) +
                (a.yshift || 0) + 4 - (1 - y) * side.y : 0;
        }));
        return Math.max(margin.t, Math.round(top));
    }

    /* Tick labels further from their axis (a y axis' lowest and an x axis' first met at
       the corner), and auto ticks no more than their labels (about 3 characters and a gap
       across, a line and a gap high) have room for. */
    function fitTicks(f, scale, side) {
        for (const letter of ["x", "y"]) {
            for (const k of f.axes(letter)) {
                const axis = f.layout[k], font = f.size(axis.tickfont);
                const px = (f.domain(k)[1] - f.domain(k)[0]) * side[letter];
                axis.ticklabelstandoff = Math.round((axis.ticklabelstandoff || 0) * scale +
                                                    6 * (scale - 1));
                if (!axis.tickvals && axis.tickmode !== "array" && !(axis.dtick > 0) && px > 0) {
                    const per = letter === "x" ? (3 * EM_PER_CHAR + 1.2) * font : 2.2 * font;
                    const most = Math.max(2, Math.floor(px / per));
                    axis.nticks = axis.nticks ? Math.min(axis.nticks, most) : most;
                }
            }
        }
    }

    /* A legend beside a narrow figure goes under it, across (not when a text on the page
       sits in the right margin the legend made). */
    function legendUnder(f, box) {
        const legend = f.layout.legend || {};
        const names = f.data.filter(t => t.showlegend !== false && t.name).map(t => widest(t.name));
        const px = (Math.max(0, ...names) * EM_PER_CHAR + 2.5) * f.size(legend.font);
        if (legend.orientation !== "h" && (legend.x === undefined || legend.x >= 1) &&
                px > 0.22 * box.width && !f.notes.some(a => (a.xref || "paper") === "paper" &&
                                                         a.x > 1)) {
            f.layout.legend = Object.assign({}, legend, {orientation: "h", xref: "container",
                x: 0.5, xanchor: "center", yref: "container", y: 0, yanchor: "bottom"});
        }
    }

    /* The figure ``fig`` (its fonts grown by ``scale``; the page's type size is larger than
       x1) with room made for its type, for a graph of ``box`` ({width, height} in px; its
       panels' sizes are estimated from it): margins grown by ``scale``, then the parts above.
       A new figure; ``fig`` is not changed. */
    function roomForType(fig, scale, box) {
        if (!fig || !fig.layout || typeof scale !== "number") { return fig; }
        const f = parts(JSON.parse(JSON.stringify(fig.layout)),
                        JSON.parse(JSON.stringify(fig.data || [])), scale);
        const margin = Object.assign({l: 80, r: 80, t: 100, b: 80}, f.layout.margin || {});
        ["l", "r", "t", "b"].forEach(m => { margin[m] = Math.round(margin[m] * scale); });
        const side = {x: Math.max(1, box.width - margin.l - margin.r),
                      y: Math.max(1, box.height - margin.t - margin.b)};
        foldTitles(f, box, side);
        moveApart(f, scale, side);
        margin.t = topMargin(f, margin, side);
        f.layout.margin = Object.assign({}, f.layout.margin || {}, margin);
        fitTicks(f, scale, side);
        legendUnder(f, box);
        return Object.assign({}, fig, {layout: f.layout, data: f.data});
    }

    /* Texts of a drawn graph that print over one another (boxes meeting by more than 1 px
       across and a tenth of the shorter's height down) or stick out of the graph. */
    function clashes(gd) {
        const frame = gd.getBoundingClientRect();
        const boxes = [];
        for (const t of gd.querySelectorAll("svg text")) {
            const s = window.getComputedStyle(t);
            const r = t.getBoundingClientRect();
            if ((t.textContent || "").trim() && r.width >= 1 && r.height >= 1 &&
                    s.display !== "none" && s.visibility !== "hidden" &&
                    parseFloat(s.opacity) !== 0) { boxes.push(r); }
        }
        if (boxes.some(r => r.left < frame.left - 1 || r.right > frame.right + 1 ||
                            r.top < frame.top - 1 || r.bottom > frame.bottom + 1)) { return true; }
        return boxes.some((a, i) => boxes.slice(i + 1).some(b =>
            Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
            Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) >
                Math.max(2, 0.1 * Math.min(a.height, b.height))));
    }

    const graphBox = () => {
        const graph = document.getElementById(IDS.GRAPH);
        const r = graph ? graph.getBoundingClientRect() : {width: 0, height: 0};
        return {width: r.width, height: r.height};
    };
    let withGhost = null;  /* lecture-figure.js's */
    let shown = null;  /* the server's figure last given to the graph, and its type size */
    /* After a draw: a figure whose texts still clash is drawn again one type size smaller
       (its layout's meta.fit; meta.scale stays the page's). */
    function refit(gd) {
        const meta = (gd.layout && gd.layout.meta) || {};
        if (!shown || meta.state !== shown.state || !(meta.fit > 1) || !clashes(gd)) { return; }
        const fit = CONFIG.typeScales.filter(s => s < meta.fit).pop() || 1;
        let fig = withGhost(shown.fig, fit, {data: gd.data, layout: gd.layout});
        if (!fig || !fig.layout) { return; }
        fig = roomForType(fig, fit, graphBox());
        fig.layout.meta = Object.assign({}, fig.layout.meta, {scale: meta.scale, fit: fit});
        window.Plotly.react(gd, fig);
    }
    const watched = new WeakSet();
    function watch() {
        const gd = document.querySelector("#" + IDS.GRAPH + " .js-plotly-plot");
        if (!gd || watched.has(gd) || typeof gd.on !== "function") { return; }
        watched.add(gd);
        gd.on("plotly_afterplot", () => window.requestAnimationFrame(() => refit(gd)));
        window.requestAnimationFrame(() => refit(gd));  /* a draw before we listened */
    }

    /* The lecture's figure goes through withGhost (lecture-figure.js) on its way to the
       graph, from the server and from the prepared next step alike: room is made there,
       after the fonts grew. */
    function wrap() {
        const lecture = window.dash_clientside && window.dash_clientside.lecture;
        if (!lecture || typeof lecture.withGhost !== "function") { return false; }
        if (lecture.withGhost === roomy) { return true; }
        withGhost = lecture.withGhost;
        lecture.withGhost = roomy;
        return true;
    }
    function roomy(fig, scale, prev) {
        const out = withGhost.apply(this, arguments);
        if (!out || !out.layout) { return out; }
        const meta = out.layout.meta || {};
        shown = {fig: fig, state: meta.state};
        [0, 500, 2000].forEach(ms => window.setTimeout(watch, ms));
        const room = scale > 1 ? roomForType(out, scale, graphBox()) : out;
        room.layout.meta = Object.assign({}, meta, {fit: scale});
        return room;
    }
    if (!wrap()) { window.addEventListener("DOMContentLoaded", wrap); }
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {roomForType: roomForType});
})();
