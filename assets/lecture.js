/* The lecture view (/lecture): the keys a presentation clicker sends, the play button, the
   theme and the panels; the Lecture link of every page. No server round trip here. Every
   change a key or a button makes here is also told to the lecture's other windows
   (window.bnvizSync: assets/presenter.js). */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const N_STEPS = () => CONFIG.steps;
    const set = (id, props) => window.dash_clientside.set_props(id, props);
    /* the lecture's other windows (assets/presenter.js), when there */
    const sync = () => window.bnvizSync || null;
    /* Animations keep their duration on a busy machine by dropping frames, not by slowing
       down (issue 31: the training playback took 33 s instead of 3.7 s under load): their
       progress follows the clock, at the speed `[` and `]` set (x0.25 ... x4); a frame that
       is late is skipped. `p` pauses in the middle and plays on from there. */
    const SPEEDS = CONFIG.speeds;
    let speed = 1;
    function setSpeed(step) {
        const i = Math.max(0, Math.min(SPEEDS.length - 1, SPEEDS.indexOf(speed) + step));
        speed = SPEEDS[i];
        const play = document.getElementById(IDS.PLAY);
        if (play) {
            play.textContent = speed === 1 ? "play" : "play ×" + speed;
            play.title = "play the step's animation (p); speed ×" + speed + " ([ slower, ] faster)";
        }
    }
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
    /* The slider sweep: its progress (0..1), advanced by the time between two ticks. */
    let sweep = null;  /* {progress, last, paused} */
    let playClicks = null;  /* the play button's n_clicks last seen */
    /* A new step, or a reset, stops the play button's sweep at once: a tick of it after the
       step changed would move the new step's slider. */
    const stopPlaying = () => {
        set(IDS.TIMER, {disabled: true});
        sweep = null;
        stopFrames();
    };
    /* The training step's recorded frames (plotly frames of its figure): the play button
       plays them, pauses them, and plays them again from the start once all were shown.
       Each tick shows the frame the clock has reached, once the last one is drawn. */
    const graphDiv = () => document.querySelector("#" + IDS.GRAPH + " .js-plotly-plot");
    let frames = null;  /* {gd, position (frames, fractional), last, playing, drawing, ms} */
    function stopFrames() {
        if (frames) { frames.playing = false; }
        frames = null;
    }
    function frameTick() {
        const f = frames;
        if (!f || !f.playing || f.gd !== graphDiv()) { return; }
        const now = performance.now();
        const n = (f.gd.layout && f.gd.layout.meta && f.gd.layout.meta.frames) || 0;
        f.position += (now - f.last) * speed / f.ms;
        f.last = now;
        const index = Math.min(n - 1, Math.floor(f.position));
        if (!f.drawing && index !== f.shown) {
            f.drawing = true;
            f.shown = index;
            window.Plotly.animate(f.gd, [String(index)], {
                frame: {duration: 0, redraw: true}, transition: {duration: 0},
                mode: "immediate"}).then(() => { f.drawing = false; },
                                         () => { f.drawing = false; });
        }
        if (index >= n - 1) { f.playing = false; f.atEnd = true; return; }
        window.requestAnimationFrame(frameTick);
    }
    function playFrames(ms) {
        const gd = graphDiv();
        if (!gd || !window.Plotly) { return; }
        if (frames && frames.gd === gd && frames.playing) {  /* pause where it is */
            frames.playing = false;
            return;
        }
        if (!frames || frames.gd !== gd || frames.atEnd) {  /* from the start */
            frames = {gd: gd, position: 0, shown: -1, ms: ms, drawing: false};
        }
        frames.playing = true;
        frames.last = performance.now();
        window.requestAnimationFrame(frameTick);
    }

    /* The next step, prepared by the server while the lecturer talks (callbacks/lecture/
       prefetch.py): a step key shows it at once, and the server's answer for the same
       state (its meta.state) is not drawn again. */
    let prefetched = null;  /* the PREFETCH store's data */
    let shownKey = null;  /* "step|theme|split" of the state shown */
    function showPrefetched(step) {
        const pf = prefetched;
        if (!pf || pf.step !== step || pf.from !== shownKey) { return false; }
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

    /* Named snapshots (n): the state shown (its query) under a name, kept in the URL's
       `snaps` beside the state (callbacks/lecture/snapshots.py lists them). */
    let shownQuery = null;
    let snapshots = {items: [], max: 0, name_max: 0};  /* the store's: Python's caps */
    function snapsPart(items) {
        if (!items.length) { return ""; }
        return new URLSearchParams({snaps: JSON.stringify(
            items.map(s => [s.name, s.query]))}).toString();
    }
    function saveSnapshot() {
        if (typeof shownQuery !== "string") { return; }
        const title = (document.getElementById(IDS.TITLE) || {}).textContent || "";
        const counter = (document.getElementById(IDS.COUNTER) || {}).textContent || "";
        const suggested = (counter.split("/")[0].trim() + " " + title).trim()
            .slice(0, snapshots.name_max);
        const name = window.prompt("Name this snapshot (the step list and the link keep it):",
                                   suggested);
        if (name === null) { return; }
        const items = snapshots.items.filter(s => s.query !== shownQuery)
            .concat([{name: name.trim().slice(0, snapshots.name_max) || suggested,
                      query: shownQuery}])
            .slice(-snapshots.max);
        const data = Object.assign({}, snapshots, {items: items});
        set(IDS.SNAPSHOTS, {data: data});
        if (sync()) { sync().snapshots(data); }
    }
    /* What the URL keeps besides the state shown: the snapshots, the windows' session. */
    function keepPart() {
        return [snapsPart(snapshots.items), sync() ? sync().urlPart() : ""]
            .filter(Boolean).join("&");
    }
    /* Open a state of this lecture without reloading the page: Dash's location component
       follows the browser's history (popstate). */
    function navigate(url) {
        window.history.pushState(null, "", url);
        window.dispatchEvent(new PopStateEvent("popstate", {state: null}));
    }

    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        lecture: {
            /* The URL: the state shown and the snapshots. */
            writeUrl: function (query, snaps) {
                if (snaps && Array.isArray(snaps.items)) { snapshots = snaps; }
                if (typeof query !== "string") { return window.dash_clientside.no_update; }
                shownQuery = query;
                const keep = keepPart();
                return window.dash_clientside.bnviz.replaceUrl(
                    query + (keep ? (query ? "&" : "") + keep : ""));
            },
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
            /* The previous or next step from the buttons (0 is the explorer's state). */
            move: function (_prev, _next, step) {
                const trig = window.dash_clientside.callback_context.triggered_id;
                const s = typeof step === "number" ? step : 1;
                const n = N_STEPS();
                stopPlaying();
                if (trig === IDS.NEXT && s < n) { showPrefetched(s + 1); }
                const to = trig === IDS.NEXT ? Math.min(n, s + 1) :
                    trig === IDS.PREV ? Math.max(1, s - 1) : null;
                if (to === null) { return window.dash_clientside.no_update; }
                if (sync()) { sync().change({step: to, sliders: null}); }
                return to;
            },
            toggleTheme: function (_clicks, theme) {
                stopFrames();  /* the new theme's figure starts at its first frame */
                const to = theme === "dark" ? "light" : "dark";
                if (sync()) { sync().change({theme: to}); }
                return to;
            },
            toggleSplit: function (_clicks, split) {
                const to = split !== true;
                if (sync()) { sync().change({split: to}); }
                return to;
            },
            themeClass: function (theme) {
                return IDS.ROOT + " lecture-" + (theme === "dark" ? "dark" : "light");
            },
            toggle: function (_clicks, open) { return !open; },
            /* The full URL of the state shown (for the QR code). */
            link: function (query) {
                if (typeof query !== "string") { return window.dash_clientside.no_update; }
                return window.location.origin + window.location.pathname + "?" + query;
            },
            /* The server's figure, with a ghost of the partition from before mu or sigma
               started to move (dotted, faint, under the new lines) while only they move: the
               previous picture's ghost is kept, or its lines become the ghost. */
            withGhost: function (fig, scale, prev) {
                if (!fig || !fig.layout) { return window.dash_clientside.no_update; }
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
            /* The play button sweeps the step's slider; each timer tick moves it one step
               (or plays the figure's frames: the training step). */
            play: function (clicks, _ticks, anim, mu, sigma) {
                const no = window.dash_clientside.no_update;
                /* a click is a new n_clicks, whichever input Dash names as the trigger (a
                   click and a tick of the timer can arrive in one call) */
                const clicked = clicks !== playClicks;
                playClicks = clicks;
                const trig = clicked ? IDS.PLAY : IDS.TIMER;
                if (!anim) { return [no, no, true]; }
                if (anim.frames) {  /* the figure's recorded frames: plotly.js draws them */
                    if (trig === IDS.PLAY) { playFrames(anim.ms); }
                    return [no, no, true];
                }
                const isMu = anim.slider === IDS.MU;
                const now = performance.now();
                const at = (p) => Math.round((anim.from + p * (anim.to - anim.from)) * 1000)
                    / 1000;
                const out = (value, done) => isMu ? [value, no, done] : [no, value, done];
                if (trig === IDS.PLAY) {
                    if (sweep && !sweep.paused) {  /* pause in the middle */
                        sweep.paused = true;
                        return [no, no, true];
                    }
                    if (sweep && sweep.paused) {  /* play on from there */
                        sweep.paused = false;
                        sweep.last = now;
                        return [no, no, false];
                    }
                    sweep = {progress: 0, last: now, paused: false};
                    return out(anim.from, false);
                }
                if (!sweep || sweep.paused) { return [no, no, true]; }
                /* the nominal sweep: one `by` a 100 ms tick; late ticks skip values */
                const seconds = 0.1 * (anim.to - anim.from) / anim.by;
                sweep.progress += (now - sweep.last) / 1000 * speed / seconds;
                sweep.last = now;
                if (sweep.progress >= 1) {
                    sweep = null;
                    return out(anim.to, true);
                }
                return out(at(sweep.progress), false);
            },
        },
    });

    let digits = "";
    let digitTimer = null;
    /* the step asked for and not drawn yet: two quick presses of a clicker move two steps */
    let pending = null;
    function currentStep() {
        const el = document.getElementById(IDS.COUNTER);
        const m = el && el.textContent.match(/^(\d+)/);
        const shown = m ? parseInt(m[1], 10) : 0;
        if (pending !== null && pending !== shown) { return pending; }
        pending = null;
        return shown;
    }
    /* A step, as the keys do; `quiet`: a step another window chose (not told again). */
    function go(step, quiet) {
        const n = N_STEPS();
        stopPlaying();
        const shown = currentStep();
        pending = Math.max(1, Math.min(n, step));
        if (pending === shown + 1) { showPrefetched(pending); }
        set(IDS.STEP, {data: pending});
        if (!quiet && sync()) { sync().change({step: pending, sliders: null}); }
    }
    /* go; current: the step shown or asked for; keep: the URL's part besides the state;
       prepared: the step prepared for the next key (tests) */
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {
        go: go, current: currentStep, keep: keepPart,
        prepared: () => prefetched && prefetched.from === shownKey ? prefetched.step : null});
    function jump() {
        if (digits) { go(parseInt(digits, 10)); }
        digits = "";
        digitTimer = null;
    }
    function toggleFullScreen() {
        if (document.fullscreenElement) { document.exitFullscreen(); }
        else if (document.documentElement.requestFullscreen) {
            document.documentElement.requestFullscreen().catch(() => {});
        }
    }

    document.addEventListener("keydown", function (e) {
        const root = document.getElementById(IDS.ROOT);
        if (!root || e.ctrlKey || e.metaKey || e.altKey) { return; }
        const tag = (e.target && e.target.tagName) || "";
        if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
        const blank = document.getElementById(IDS.BLANK);
        if (blank && !blank.hidden) {  /* any key brings the screen back */
            blank.hidden = true;
            if (sync()) { sync().blank(false); }
            e.preventDefault();
            return;
        }
        const k = e.key;
        /* an open panel (the keys, the QR code) takes the keys: Escape closes it, ? and q
           toggle theirs; the tour behind it does not move */
        if (document.querySelector(".modal.show")) {
            if (k === "?") { document.getElementById(IDS.HELP_BUTTON).click(); }
            else if (k === "q") { document.getElementById(IDS.QR_BUTTON).click(); }
            else { return; }
            e.preventDefault();
            return;
        }
        /* a slider a keyboard user tabbed to keeps its arrows, Home and End; a clicker's
           PageUp, PageDown and Space always move the tour */
        const onSlider = e.target && e.target.closest && e.target.closest("[role=slider]");
        if (onSlider && /^(Arrow(Left|Right|Up|Down)|Home|End)$/.test(k)) { return; }
        let handled = true;
        if (k === "PageDown" || k === "ArrowRight" || k === " " || k === "Spacebar") {
            go(currentStep() + 1);
        } else if (k === "PageUp" || k === "ArrowLeft") {
            go(currentStep() - 1);
        } else if (k === "Home") {
            go(1);
        } else if (k === "End") {
            go(N_STEPS());
        } else if (/^[0-9]$/.test(k)) {
            digits += k;
            clearTimeout(digitTimer);
            /* jump at once when no further digit can make a step number */
            if (parseInt(digits + "0", 10) > N_STEPS()) { jump(); }
            else { digitTimer = setTimeout(jump, 700); }
        } else if (k === "f") {
            toggleFullScreen();
        } else if (k === "b" || k === ".") {
            /* the presenter blanks (and brings back) the projector, never itself */
            const s = sync();
            if (s && s.isPresenter()) { s.blank(!s.blanked()); }
            else if (s) { s.blank(true); }
            else if (blank) { blank.hidden = false; }
        } else if (k === "v") {  /* the presenter view, in a window of its own */
            if (!(sync() && sync().isPresenter())) {
                window.open("/lecture/presenter" + window.location.search, "bnviz-presenter");
            }
        } else if (k === "n") {
            saveSnapshot();
        } else if (k === "r") {
            stopPlaying();
            set(IDS.RESET, {data: Date.now()});
            if (sync()) { sync().reset(); }
        } else if (k === "+" || k === "=" || k === "-") {
            setTypeScale(k === "-" ? -1 : 1);
        } else if (k === "[" || k === "]") {
            setSpeed(k === "]" ? 1 : -1);
        } else if (k === "p") {
            const play = document.getElementById(IDS.PLAY);
            if (play && !play.disabled) { play.click(); }
        } else if (k === "s") {
            const split = document.getElementById(IDS.SPLIT_BUTTON);
            if (split && !split.disabled) { split.click(); }
        } else if (k === "t") {
            document.getElementById(IDS.THEME_BUTTON).click();
        } else if (k === "q") {
            document.getElementById(IDS.QR_BUTTON).click();
        } else if (k === "?") {
            document.getElementById(IDS.HELP_BUTTON).click();
        } else {
            handled = false;
        }
        if (handled) {
            e.preventDefault();
            e.stopPropagation();
            if (document.activeElement && document.activeElement !== document.body) {
                document.activeElement.blur();  /* a focused slider must not take the keys */
            }
        }
    }, true);

    /* A snapshot's link opens its state in this page and in the lecture's other windows
       (its data-state: callbacks/lecture/snapshots.py). */
    document.addEventListener("click", function (e) {
        const a = e.target && e.target.closest && e.target.closest("a." + IDS.SNAPSHOT_LINK);
        if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) { return; }
        e.preventDefault();
        stopPlaying();
        let target = null;
        try { target = JSON.parse(a.getAttribute("data-state") || "null"); } catch (err) { }
        if (target && sync() && sync().open(target)) { return; }
        const keep = keepPart();
        navigate(window.location.pathname + "?" + a.getAttribute("data-query") +
                 (keep ? "&" + keep : ""));
    }, true);
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {navigate: navigate});

    /* After a drag with the mouse a slider gives its focus back, so that a clicker's arrow
       keys move the tour, not that slider. */
    document.addEventListener("pointerup", function () {
        if (!document.getElementById(IDS.ROOT)) { return; }
        setTimeout(function () {
            const a = document.activeElement;
            if (a && a.getAttribute && a.getAttribute("role") === "slider") { a.blur(); }
        }, 0);
    }, true);

    /* Every page's Lecture link opens the lecture view at the page's state: the explorer's
       settings (its URL query) or the tour step of the page's figure. */
    const PAGE_STEP = CONFIG.pageStep;  /* the pages' declarations (layouts/<page>.py) */
    document.addEventListener("click", function (e) {
        const a = e.target && e.target.closest && e.target.closest("#" + IDS.OPEN);
        if (!a) { return; }
        e.preventDefault();
        e.stopPropagation();
        const path = window.location.pathname;
        let href = "/lecture";
        if (path === "/" ) {
            const q = window.location.search.replace(/^\?/, "");
            href += "?step=0" + (q ? "&" + q : "");
        } else if (PAGE_STEP[path]) {
            href += "?step=" + PAGE_STEP[path];
        }
        window.location.assign(href);
    }, true);
})();

/* Tooltip of the batch-size slider, whose value is log2 of the batch (its last position,
   the config's batchAll: all the data). */
window.dccFunctions = window.dccFunctions || {};
window.dccFunctions.batchSize = function (value) {
    return value >= window.bnvizConfig.lecture.batchAll ? "all" : String(Math.pow(2, value));
};
