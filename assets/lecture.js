/* The lecture view (/lecture): the keys a presentation clicker sends and the page's buttons
   (the steps, the theme, the split, the panels), the Lecture link of every page. No server
   round trip here. Every change a key or a button makes here is also told to the lecture's
   other windows (window.bnvizSync: assets/presenter.js). The lecture's other scripts, each
   adding what it gives to window.bnvizLecture (used when a key comes, never at load, so
   the order in which assets/ loads them does not matter):
   - lecture-figure.js: the figure (type size, ghost, marks, the next step prepared, one
     draw per step);
   - lecture-playback.js: the play button's sweep and frames, their speed;
   - lecture-url.js: the URL, the named snapshots and a snapshot's link. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const N_STEPS = () => CONFIG.steps;
    const set = (id, props) => window.dash_clientside.set_props(id, props);
    /* the lecture's other windows (assets/presenter.js), when there */
    const sync = () => window.bnvizSync || null;
    /* the other lecture scripts' parts (above) */
    const part = () => window.bnvizLecture;

    const clientside = (window.dash_clientside = window.dash_clientside || {});
    clientside.lecture = Object.assign(clientside.lecture || {}, {
        /* The previous or next step from the buttons (0 is the explorer's state). */
        move: function (_prev, _next, step) {
            const trig = window.dash_clientside.callback_context.triggered_id;
            const s = typeof step === "number" ? step : 1;
            const n = N_STEPS();
            part().stopPlaying();
            if (trig === IDS.NEXT && s < n) { part().showPrefetched(s + 1); }
            const to = trig === IDS.NEXT ? Math.min(n, s + 1) :
                trig === IDS.PREV ? Math.max(1, s - 1) : null;
            if (to === null) { return window.dash_clientside.no_update; }
            if (sync()) { sync().change({step: to, sliders: null}); }
            return to;
        },
        toggleTheme: function (_clicks, theme) {
            part().stopFrames();  /* the new theme's figure starts at its first frame */
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
        /* "export all", at the click: the button disabled and a first line until the
           server's answer (callbacks/lecture/export.py) says more */
        exportStarted: function (clicks) {
            const no = window.dash_clientside.no_update;
            if (!clicks) { return [no, no]; }
            return [true, "slides: 0 of " + N_STEPS() + " steps drawn; starting the export..."];
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
        part().stopPlaying();
        const shown = currentStep();
        pending = Math.max(1, Math.min(n, step));
        if (pending === shown + 1) { part().showPrefetched(pending); }
        set(IDS.STEP, {data: pending});
        if (!quiet && sync()) { sync().change({step: pending, sliders: null}); }
    }
    /* go; current: the step shown or asked for */
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {
        go: go, current: currentStep});
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
        } else if (k === "a" && sync() && sync().isPresenter()) {
            /* the hall's question from the presenter: the projector asks it (hall.js) */
            sync().ask(!sync().asked());
        } else if (k === "v") {  /* the presenter view, in a window of its own */
            if (!(sync() && sync().isPresenter())) {
                window.open("/lecture/presenter" + window.location.search, "bnviz-presenter");
            }
        } else if (k === "n") {
            part().saveSnapshot();
        } else if (k === "r") {
            part().stopPlaying();
            set(IDS.RESET, {data: Date.now()});
            if (sync()) { sync().reset(); }
        } else if (k === "+" || k === "=" || k === "-") {
            part().setTypeScale(k === "-" ? -1 : 1);
        } else if (k === "[" || k === "]") {
            part().setSpeed(k === "]" ? 1 : -1);
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
