/* The lecture view's URL (/lecture): the state shown, the named snapshots (n) and the
   windows' session it keeps, the full link for the QR code, and a snapshot's link opened
   without a reload. What it gives the other lecture scripts (window.bnvizLecture):
   saveSnapshot, keep, navigate. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const set = (id, props) => window.dash_clientside.set_props(id, props);
    /* the lecture's other windows (assets/presenter.js), when there */
    const sync = () => window.bnvizSync || null;

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

    const clientside = (window.dash_clientside = window.dash_clientside || {});
    clientside.lecture = Object.assign(clientside.lecture || {}, {
        /* The URL: the state shown and the snapshots. */
        writeUrl: function (query, snaps) {
            if (snaps && Array.isArray(snaps.items)) { snapshots = snaps; }
            if (typeof query !== "string") { return window.dash_clientside.no_update; }
            shownQuery = query;
            const keep = keepPart();
            return window.dash_clientside.bnviz.replaceUrl(
                query + (keep ? (query ? "&" : "") + keep : ""));
        },
        /* The full URL of the state shown (for the QR code). */
        link: function (query) {
            if (typeof query !== "string") { return window.dash_clientside.no_update; }
            return window.location.origin + window.location.pathname + "?" + query;
        },
    });

    /* A snapshot's link opens its state in this page and in the lecture's other windows
       (its data-state: callbacks/lecture/snapshots.py). */
    document.addEventListener("click", function (e) {
        const a = e.target && e.target.closest && e.target.closest("a." + IDS.SNAPSHOT_LINK);
        if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) { return; }
        e.preventDefault();
        window.bnvizLecture.stopPlaying();
        let target = null;
        try { target = JSON.parse(a.getAttribute("data-state") || "null"); } catch (err) { }
        if (target && sync() && sync().open(target)) { return; }
        const keep = keepPart();
        navigate(window.location.pathname + "?" + a.getAttribute("data-query") +
                 (keep ? "&" + keep : ""));
    }, true);

    /* keep: the URL's part besides the state; navigate: open a state without a reload */
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {
        saveSnapshot: saveSnapshot, keep: keepPart, navigate: navigate});
})();
