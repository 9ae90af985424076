/* The hall answers on the projector (/lecture; issue 46, item 6; the server's side:
   bnviz/server/hall.py). `a` opens the current step's question: an overlay shows the
   question, the QR code of the phones' page and its link (with one warning line when the link
   is a loopback one), and the hall's taps are drawn over the lecture graph as a density, polled
   every second from a small JSON endpoint (no Dash callback, no scene drawn again per tap).
   While the question is open, `p` reveals the answer (its point, where the step has one) and
   keeps its own meaning too: lecture-playback.js's play button plays the step over the taps.
   `a` again, or Escape, closes the question (the server deletes its taps). Its own keydown
   listener: assets/lecture.js binds neither `a` nor Escape on the projector. The presenter's
   window asks and closes through the lecture's shared state (its `ask` field, presenter.js):
   the projector acts on it here (bnvizHall.set), and tells that state what its own keys did;
   play, pressed in either window, reveals the answer. */
(function () {
    const API = "/api/lecture/hall/";
    const POLL_MS = 1000;
    const DENSITY = "hall taps";
    const ANSWER = "hall answer";
    const SESSION_PATTERN = /^[a-z0-9]{16,40}$/;
    const config = () => (window.bnvizConfig && window.bnvizConfig.lecture) || null;
    const onProjector = () => {
        const c = config();
        return !!(c && document.getElementById(c.ids.ROOT)) &&
            !/\/lecture\/presenter\/?$/.test(window.location.pathname);
    };
    const graphDiv = () => document.querySelector("#" + config().ids.GRAPH + " .js-plotly-plot");

    /* The lecture session's id (the presenter's link's), else one of this tab's own. */
    function sessionId() {
        const given = new URLSearchParams(window.location.search).get("session");
        if (given && SESSION_PATTERN.test(given)) { return given; }
        let own = window.sessionStorage.getItem("bnviz-hall-session");
        if (!own || !SESSION_PATTERN.test(own)) {
            const bytes = new Uint8Array(20);
            window.crypto.getRandomValues(bytes);
            own = Array.from(bytes, b => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36])
                .join("");
            window.sessionStorage.setItem("bnviz-hall-session", own);
        }
        return own;
    }

    const listening = new WeakSet();  /* the graphs whose redraws hall.js watches */
    let open = null;  /* {session, question, taps: {x, y, count}, answer, timer, seen} */

    function call(method, path, body) {
        return fetch(API + open.session + path, {
            method: method, credentials: "same-origin",
            headers: body === undefined ? {} : {"Content-Type": "application/json"},
            body: body === undefined ? undefined : JSON.stringify(body),
        }).then(r => r.json().then(data => {
            if (!r.ok) { throw new Error(data.error || ("HTTP " + r.status)); }
            return data;
        }));
    }

    function traces() {
        const q = open.question;
        const bins = (lo, hi) => ({start: lo, end: hi, size: (hi - lo) / 14});
        const out = [{
            type: "histogram2d", name: DENSITY, x: open.taps.x, y: open.taps.y,
            xaxis: "x", yaxis: "y", xbins: bins(q.x[0], q.x[1]), ybins: bins(q.y[0], q.y[1]),
            zmin: 0, zsmooth: "best", showscale: false, hoverinfo: "skip",
            colorscale: [[0, "rgba(230,159,0,0)"], [0.15, "rgba(230,159,0,0.35)"],
                         [1, "rgba(213,94,0,0.8)"]],
        }];
        if (open.answer) {
            out.push({type: "scatter", mode: "markers+text", name: ANSWER,
                      x: [open.answer[0]], y: [open.answer[1]], xaxis: "x", yaxis: "y",
                      text: ["answer"], textposition: "top center", hoverinfo: "skip",
                      textfont: {size: 18, color: "#000"}, showlegend: false,
                      marker: {symbol: "star", size: 26, color: "#fff",
                               line: {color: "#000", width: 2.5}}});
        }
        return out;
    }

    const ours = gd => (gd.data || []).map((t, i) => [t.name, i])
        .filter(p => p[0] === DENSITY || p[0] === ANSWER).map(p => p[1]);

    /* Draw the taps (and the answer) over the graph: added where a redraw by Dash dropped
       them; new taps only restyle the drawn traces (one redraw a poll, not two). */
    function draw() {
        const gd = graphDiv();
        if (!open || !open.taps || !gd || !window.Plotly || !gd.data) { return; }
        const mine = ours(gd);
        const wanted = traces();
        if (mine.length === wanted.length) {
            window.Plotly.restyle(gd, {x: wanted.map(t => t.x), y: wanted.map(t => t.y)}, mine);
            return;
        }
        const redo = () => window.Plotly.addTraces(gd, wanted);
        if (mine.length) { window.Plotly.deleteTraces(gd, mine).then(redo); } else { redo(); }
    }

    function onAfterplot() {
        const gd = graphDiv();
        if (open && gd && ours(gd).length === 0) { draw(); }
    }

    function poll() {
        if (!open) { return; }
        const lecture = window.bnvizLecture;
        if (open.question && lecture && lecture.current() !== open.question.step) {
            close(true);  /* the question is its step's: another step closes it */
            return;
        }
        call("GET", "").then(state => {
            if (!open) { return; }
            if (!state.question) { close(false); return; }
            const key = state.count + ":" + state.x.join(",") + ":" + state.y.join(",");
            const changed = key !== open.seen;
            open.seen = key;
            open.taps = {x: state.x, y: state.y, count: state.count};
            setText("hall-count", state.count + (state.count === 1 ? " answer" : " answers"));
            if (changed) { draw(); }
        }).catch(() => {});
    }

    function setText(id, text) {
        const el = document.getElementById(id);
        if (el) { el.textContent = text; }
    }

    function overlay(q) {
        let box = document.getElementById("hall-overlay");
        if (box) { box.remove(); }
        box = document.createElement("aside");
        box.id = "hall-overlay";
        box.className = "hall-overlay";
        box.setAttribute("role", "dialog");
        box.setAttribute("aria-label", "the hall's question");
        const line = (tag, id, cls, text) => {
            const el = document.createElement(tag);
            if (id) { el.id = id; }
            el.className = cls;
            if (text) { el.textContent = text; }
            box.appendChild(el);
            return el;
        };
        line("div", "hall-ask", "hall-ask", q.ask);
        line("div", "hall-prompt", "hall-prompt", q.prompt);
        const img = line("img", "hall-qr", "hall-qr", "");
        img.alt = "QR code of the phones' page";
        line("div", "hall-link", "hall-link", "");
        const warn = line("div", "hall-warning", "hall-warning", "");
        warn.hidden = true;
        line("div", "hall-count", "hall-count", "0 answers");
        line("div", "", "hall-keys", "p: reveal · a: close");
        document.body.appendChild(box);
        call("GET", "/link").then(link => {
            img.src = link.qr;
            setText("hall-link", link.link);
            if (link.warning) { warn.textContent = "⚠ " + link.warning; warn.hidden = false; }
        }).catch(err => setText("hall-link", err.message));
    }

    const sync = () => window.bnvizSync;
    /* tell the other window (the presenter's line, its `a`) what this one did */
    function tell(on) {
        if (sync() && sync().asked() !== on) { sync().ask(on); }
    }

    /* Show the open question q and follow its taps. */
    function start(q) {
        const gd = graphDiv();
        open.question = q;
        open.answer = q.revealed ? q.answer : null;
        open.taps = {x: [], y: [], count: 0};
        overlay(q);
        if (gd && !listening.has(gd)) {
            gd.on("plotly_afterplot", onAfterplot);
            listening.add(gd);
        }
        draw();
        open.timer = window.setInterval(poll, POLL_MS);
        poll();
    }

    /* Open the step's question (resume: a window joining the lecture takes up the question
       the server has open on this step, its taps kept, rather than asking it again). */
    function ask(resume) {
        const gd = graphDiv();
        const lecture = window.bnvizLecture;
        /* the axes' ranges as drawn (plotly writes an autorange back into the layout) */
        const layout = gd && gd.layout;
        if (!layout || !layout.xaxis || !layout.xaxis.range || !layout.yaxis ||
            !layout.yaxis.range || !lecture) { return; }
        const step = lecture.current();
        open = {session: sessionId(), question: null, taps: null, answer: null, seen: null};
        const range = axis => axis.range.map(Number);
        const fresh = () => call("POST", "/question",
                                 {step: step, x: range(layout.xaxis), y: range(layout.yaxis)});
        const asked = resume ? call("GET", "").then(state =>
            (state.question && state.question.step === step) ? state : fresh()) : fresh();
        asked.then(data => { if (open) { start(data.question); } }).catch(err => {
            open = null;
            tell(false);
            window.console.warn("hall:", err.message);
        });
    }

    function reveal() {
        if (!open || !open.question || open.question.revealed || open.revealing) { return; }
        open.revealing = true;
        call("POST", "/reveal", {}).then(data => {
            if (!open) { return; }
            open.question = data.question;
            open.answer = data.question.answer;
            draw();
        }).catch(() => {});
    }

    function close(tell) {
        if (!open) { return; }
        const was = open;
        window.clearInterval(was.timer);
        if (tell) { call("POST", "/close", {}).catch(() => {}); }
        open = null;
        const box = document.getElementById("hall-overlay");
        if (box) { box.remove(); }
        const gd = graphDiv();
        if (gd && window.Plotly && ours(gd).length) { window.Plotly.deleteTraces(gd, ours(gd)); }
    }

    document.addEventListener("keydown", function (e) {
        if (!onProjector() || e.ctrlKey || e.metaKey || e.altKey) { return; }
        const tag = (e.target && e.target.tagName) || "";
        if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
        const blank = document.getElementById(config().ids.BLANK);
        if ((blank && !blank.hidden) || document.querySelector(".modal.show")) { return; }
        if (e.key === "a") {
            if (open) { close(true); } else { ask(); }
            tell(!!open);
            e.preventDefault();
        } else if (e.key === "Escape" && open) {
            close(true);
            tell(false);
            e.preventDefault();
        } else if (e.key === "p" && open && open.question && !open.question.revealed) {
            reveal();  /* and lecture.js's `p` plays the step over the taps */
        }
    }, true);

    /* play, however it is pressed (p here, the button, the presenter's p or its button
       through the windows' state), reveals the answer it plays over the taps */
    document.addEventListener("click", function (e) {
        const play = config() && e.target && e.target.closest &&
            e.target.closest("#" + config().ids.PLAY);
        if (play && onProjector() && open) { reveal(); }
    }, true);

    window.bnvizHall = {
        isOpen: () => !!open,
        close: () => close(true),
        /* the question opened or closed from the other window (assets/presenter.js;
           joining: this window joins a lecture whose question is open) */
        set: function (on, joining) {
            if (!onProjector()) { return; }
            if (on && !open) { ask(joining); } else if (!on && open) { close(true); }
        },
    };
})();
