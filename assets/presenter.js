/* The lecture's one state in its windows, both ways (issue 46), and the presenter view's
   timer and links (/lecture/presenter, issue 31).

   A window's state is what it shows and does: the step, the sliders' positions (null: the
   step's own), the theme, the split, the blank screen and how many times play and reset were
   pressed. Every change made in a window (a key, a button, a slider the lecturer moved, a
   snapshot opened; assets/lecture.js and lecture-url.js call `bnvizSync`) is a new state with
   a version v = [counter, window id]: the counter is one past the newest this window has
   seen (a Lamport clock), the id breaks a tie. A window applies a state only when it is newer than
   the one it has, so no window ever goes back to an older state, whichever way the states
   come:
   - over a BroadcastChannel between the windows of one browser (at once);
   - through the server, when the windows opened the same session link (the presenter makes
     the session and shows its link: a laptop and the hall's computer): each window sends
     its changes and asks for the newest state every CONFIG.sync.pollMs
     (bnviz.server.lecture_sync).
   A window that opens or reloads joins the state: it asks the other windows (hello) and the
   server, and applies the newest answer without replaying its play or reset. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const SYNC = CONFIG.sync;
    const SLIDER_IDS = CONFIG.sliders;  /* mu, sigma, batch, depth -> the slider's id */
    const BOUNDS = SYNC.sliderBounds;  /* name -> [lowest, highest, whole numbers] */
    const channel = ("BroadcastChannel" in window) ? new BroadcastChannel(CONFIG.channel) : null;
    const isPresenter = () => !!document.getElementById(IDS.PRESENTER);
    const onLecture = () => !!document.getElementById(IDS.ROOT);
    const set = (id, props) => window.dash_clientside.set_props(id, props);
    const lecture = () => window.bnvizLecture || {};

    function randomId(n) {
        const bytes = new Uint8Array(n);
        window.crypto.getRandomValues(bytes);
        return Array.from(bytes, b => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");
    }
    const WINDOW = randomId(12);
    /* the session: the link's, or a new one for a presenter (its URL keeps it) */
    const session = (function () {
        const given = new URLSearchParams(window.location.search).get("session");
        if (given && new RegExp("^" + SYNC.sessionPattern + "$").test(given)) { return given; }
        if (!/\/lecture\/presenter\/?$/.test(window.location.pathname)) { return null; }
        const made = randomId(20);
        const q = new URLSearchParams(window.location.search);
        q.set("session", made);
        window.history.replaceState(window.history.state, "", window.location.pathname +
                                    "?" + q.toString());
        return made;
    })();

    /* a slider the lecturer touched in the last moments: its changes are sent (a drag's end
       counts from its release; an animation's ticks are not sent, each window plays its own) */
    let userSlid = 0;
    let dragging = false;
    ["pointerdown", "keydown"].forEach(function (kind) {
        document.addEventListener(kind, function (e) {
            const onSlider = !!(e.target && e.target.closest &&
                                e.target.closest(".lecture-slider"));
            if (onSlider) { userSlid = Date.now(); }
            if (kind === "pointerdown") { dragging = onSlider; }
        }, true);
    });
    document.addEventListener("pointerup", function () {
        if (dragging) { userSlid = Date.now(); }
        dragging = false;
    }, true);

    let page = null;  /* what this window shows: {query, drawn, step, theme, split, sliders} */
    let shared = null;  /* the newest state this window knows (and shows, or is drawing) */
    let seen = 0;  /* the highest counter seen */
    let ready = false;  /* the page drew its first state */
    let waiting = null;  /* the newest state that came before that */
    let joined = false;  /* a state from elsewhere was applied */
    let pendingSliders = null;  /* {step, values}: set once that step is drawn */
    let afterNavigation = null;  /* a state to apply once the page opened its query */
    let applying = false;

    function valid(s) {
        if (!s || typeof s !== "object" || !Array.isArray(s.v) || s.v.length !== 2 ||
                !Number.isInteger(s.v[0]) || s.v[0] < 1 || typeof s.v[1] !== "string" ||
                !Number.isInteger(s.step) || s.step < 0 || s.step > CONFIG.steps ||
                (s.theme !== "light" && s.theme !== "dark") || typeof s.split !== "boolean" ||
                typeof s.blank !== "boolean" || !Number.isInteger(s.play) ||
                (s.ask !== undefined && typeof s.ask !== "boolean") ||
                !Number.isInteger(s.reset) ||
                (s.query !== undefined && typeof s.query !== "string")) {
            return false;
        }
        if (s.sliders === null) { return true; }
        return !!s.sliders && typeof s.sliders === "object" && Object.keys(BOUNDS).every(
            function (k) {
                const v = s.sliders[k];
                const b = BOUNDS[k];
                return typeof v === "number" && isFinite(v) && v >= b[0] && v <= b[1] &&
                    (!b[2] || Number.isInteger(v));
            });
    }
    const newer = (a, b) => !b || a.v[0] > b.v[0] || (a.v[0] === b.v[0] && a.v[1] > b.v[1]);
    const currentStep = () => (lecture().current ? lecture().current() : page.step);

    /* A change made in this window: the new state, sent to the other windows. */
    function change(fields) {
        if (!page || !onLecture()) { return null; }
        const base = shared || {step: page.step, sliders: page.sliders, theme: page.theme,
                                split: page.split, blank: false, ask: false, play: 0, reset: 0};
        seen += 1;
        const s = Object.assign({}, base, fields, {v: [seen, WINDOW]});
        /* the hall's question is its step's: another step closes it (hall.js) */
        if (fields.step !== undefined && fields.step !== base.step && fields.ask === undefined) {
            s.ask = false;
        }
        askedLine(s.ask);
        delete s.query;
        /* step 0 (the explorer's settings, which no slider holds) travels as its query */
        const query = fields.query || (s.step === 0 ? page.query : null);
        if (s.step === 0 && typeof query === "string" && query.length <= SYNC.maxQuery) {
            s.query = query;
        }
        shared = s;
        if (channel) { channel.postMessage({kind: "state", state: s}); }
        if (session) { post(s); }
        return s;
    }

    function showBlank(on) {
        const el = document.getElementById(isPresenter() ? IDS.BLANKED : IDS.BLANK);
        if (el) { el.hidden = !on; }
    }

    /* The hall's question, open or closed in either window: the projector asks it (hall.js,
       which alone knows its graph's axes), the presenter shows that it is open. */
    function askedLine(on) {
        const line = document.getElementById(IDS.ASKED);
        if (line) { line.hidden = !on; }
    }
    function showAsked(on, join) {
        askedLine(on);
        const hall = window.bnvizHall;
        if (!isPresenter() && hall && on !== hall.isOpen()) { hall.set(on, join); }
    }

    /* The sliders of a state, once its step is drawn (a step drawn sets its own). */
    function placeSliders() {
        const p = pendingSliders;
        if (!p || !page || page.drawn !== p.step || currentStep() !== p.step) { return; }
        pendingSliders = null;
        for (const name in SLIDER_IDS) {
            const v = p.values[name];
            if (typeof v === "number" && page.sliders[name] !== v) {
                set(SLIDER_IDS[name], {value: v});
            }
        }
    }

    /* Show state s (prev: the state before it; join: a window joining, which does not play
       or reset again what was played or reset before it came). */
    function show(s, prev, join, navigate) {
        applying = true;
        try {
            showBlank(s.blank);
            showAsked(!!s.ask, join);
            if (s.step === 0 && (navigate || page.step !== 0)) {
                if (s.query && lecture().navigate) {
                    afterNavigation = page.step !== 0 ? s : null;
                    lecture().navigate(window.location.pathname + "?" + s.query +
                                       (lecture().keep ? "&" + lecture().keep() : ""));
                }
                return;
            }
            if (s.theme !== page.theme) { set(IDS.THEME, {data: s.theme}); }
            if (s.split !== page.split) { set(IDS.SPLIT, {data: s.split}); }
            pendingSliders = s.sliders ? {step: s.step, values: s.sliders} : null;
            if (s.step !== currentStep() && lecture().go) {
                lecture().go(s.step, true);
            } else {
                if (!join && prev && s.reset !== prev.reset) { set(IDS.RESET, {data: Date.now()}); }
                placeSliders();
            }
            if (!join && prev && s.play !== prev.play) {
                const play = document.getElementById(IDS.PLAY);
                if (play && !play.disabled) { play.click(); }
            }
        } finally {
            applying = false;
        }
    }

    /* A state from another window or the server. */
    function receive(s, join) {
        if (!valid(s)) { return; }
        seen = Math.max(seen, s.v[0]);
        if (!newer(s, shared)) { return; }
        if (!ready || !page) {
            if (newer(s, waiting)) { waiting = s; }
            return;
        }
        const prev = shared;
        shared = s;
        show(s, prev, join || !joined, false);
        joined = true;
    }

    /* The server: this window's changes (the newest unsent one, one request at a time), and
       the newest state every pollMs. */
    const url = () => SYNC.route + "/" + session;
    let unsent = null;
    let sending = false;
    function post(s) {
        if (s) { unsent = s; }
        if (sending || !unsent) { return; }
        sending = true;
        const body = unsent;
        unsent = null;
        let retry = false;
        fetch(url(), {method: "POST", headers: {"Content-Type": "application/json"},
                      body: JSON.stringify({state: body}), cache: "no-store"})
            .then(function (r) {
                retry = r.status === 429 || r.status >= 500;
                return r.ok ? r.json() : null;
            })
            .then(function (b) { if (b && b.state) { receive(b.state, false); } },
                  function () { retry = true; })
            .then(function () {
                if (retry && !unsent) { unsent = body; }
                /* at most ten a second while a slider is dragged */
                setTimeout(function () { sending = false; post(null); },
                           retry ? 4 * SYNC.pollMs : 100);
            });
    }
    let polling = false;
    let firstPoll = true;
    function poll() {
        if (polling || !session) { return; }
        polling = true;
        let wait = SYNC.pollMs;
        fetch(url(), {cache: "no-store"})
            .then(function (r) {
                if (r.status === 429) { wait = 4 * SYNC.pollMs; }
                return r.ok ? r.json() : null;
            })
            .then(function (b) {
                if (b) {
                    if (b.state) { receive(b.state, firstPoll); }
                    firstPoll = false;
                }
            }, function () { wait = 4 * SYNC.pollMs; })
            .then(function () {
                setTimeout(function () {
                    polling = false;
                    if (onLecture()) { poll(); }  /* a lecture page asks again on show */
                }, wait);
            });
    }

    function becomeReady() {
        ready = true;
        if (waiting) {
            const s = waiting;
            waiting = null;
            receive(s, true);
        }
        if (channel) { channel.postMessage({kind: "hello"}); }
        poll();
    }

    if (channel) {
        channel.onmessage = function (e) {
            const m = e.data || {};
            if (!onLecture()) { return; }
            if (m.kind === "hello" && shared) {
                channel.postMessage({kind: "state", state: shared, join: true});
            } else if (m.kind === "state") {
                receive(m.state, m.join === true);
            } else if (m.kind === "snapshots" && m.value && Array.isArray(m.value.items)) {
                set(IDS.SNAPSHOTS, {data: m.value});
            }
        };
    }

    /* play (its button or p) is a change too; a click made to apply a state is not */
    document.addEventListener("click", function (e) {
        if (applying || !e.target || !e.target.closest || !e.target.closest("#" + IDS.PLAY)) {
            return;
        }
        change({play: (shared ? shared.play : 0) + 1});
    }, true);

    /* what assets/lecture.js and lecture-url.js call */
    window.bnvizSync = {
        isPresenter: isPresenter,
        /* a step, theme or split chosen here */
        change: change,
        reset: () => change({reset: (shared ? shared.reset : 0) + 1, sliders: null}),
        blanked: () => !!(shared && shared.blank),
        asked: () => !!(shared && shared.ask),
        /* the hall's question opened (true) or closed here */
        ask: on => change({ask: !!on}),
        blank: function (on) {
            showBlank(on);
            change({blank: on});
        },
        /* a snapshot's state ({step, sliders, theme, split, query}), opened here */
        open: function (target) {
            const prev = shared;
            const s = change({step: target.step, sliders: target.sliders, theme: target.theme,
                              split: target.split, query: target.query});
            if (s) { show(s, prev, true, true); }
            return !!s;
        },
        snapshots: function (data) {
            if (channel) { channel.postMessage({kind: "snapshots", value: data}); }
        },
        /* the URL's part that keeps the session */
        urlPart: () => (session ? "session=" + session : ""),
        state: () => shared,
    };

    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        presenter: {
            /* What the window shows, as it changes; the lecturer's slider moves are sent. */
            watch: function (query, step, theme, split, mu, sigma, batch, depth) {
                const trig = window.dash_clientside.callback_context.triggered_id;
                const drawn = typeof query === "string" ?
                    parseInt(new URLSearchParams(query).get("step") || "1", 10) :
                    (page ? page.drawn : null);
                page = {query: typeof query === "string" ? query : (page && page.query),
                        drawn: drawn, step: typeof step === "number" ? step : 1,
                        theme: theme === "dark" ? "dark" : "light", split: split === true,
                        sliders: {mu: mu, sigma: sigma, batch: batch, depth: depth}};
                if (typeof query === "string") {
                    if (!ready) { becomeReady(); }
                    else if (!polling) { poll(); }
                    if (afterNavigation && page.drawn === 0) {
                        const s = afterNavigation;
                        afterNavigation = null;
                        show(s, s, true, false);
                    }
                }
                placeSliders();
                const slid = Object.values(SLIDER_IDS).includes(trig) &&
                    Date.now() - userSlid < 1500;
                if (ready && slid) { change({sliders: page.sliders}); }
                return window.dash_clientside.no_update;
            },
            /* The projector window's link (this state, this session), and the session's link
               for the hall's computer. */
            links: function (query) {
                const part = session ? "session=" + session : "";
                const q = [typeof query === "string" ? query : "", part].filter(Boolean);
                return ["/lecture" + (q.length ? "?" + q.join("&") : ""),
                        session ? window.location.origin + "/lecture?" + part : ""];
            },
        },
    });

    /* The presenter's clock: elapsed time since the page opened (a click starts it again),
       against the minutes planned to the end of the step shown. */
    let started = Date.now();
    document.addEventListener("click", function (e) {
        if (e.target && e.target.id === IDS.CLOCK) { started = Date.now(); }
    }, true);
    const mmss = (s) => Math.floor(s / 60) + ":" + String(Math.floor(s % 60)).padStart(2, "0");
    setInterval(function () {
        const clock = document.getElementById(IDS.CLOCK);
        if (!clock) { return; }
        const elapsed = (Date.now() - started) / 1000;
        const plan = document.getElementById(IDS.PLANNED);
        const planned = plan ? Number(plan.getAttribute("data-planned-seconds")) : NaN;
        let text = mmss(elapsed);
        if (Number.isFinite(planned) && planned > 0) {
            text += " / " + mmss(planned) + " planned";
            clock.classList.toggle("behind", elapsed > planned);
        }
        clock.textContent = text;
    }, 1000);
    /* The step list keeps its current step in view (scrolling the list only), each time
       the current step or the list's height changes. */
    let placed = null;
    setInterval(function () {
        const current = document.querySelector("#" + IDS.STEP_LIST + " li.current");
        const list = current && current.parentElement;
        if (!list) { return; }
        const key = Array.prototype.indexOf.call(list.children, current) + "|" +
            list.clientHeight;
        if (key === placed) { return; }
        placed = key;
        const r = current.getBoundingClientRect();
        const box = list.getBoundingClientRect();
        if (r.top < box.top || r.bottom > box.top + list.clientHeight) {
            list.scrollTop += r.top - box.top - (list.clientHeight - r.height) / 2;
        }
    }, 200);
})();
