/* The phones' page of the hall answers (/hall/<hall id>; issue 46, item 6): the open
   question's axes, in the figure's data coordinates, drawn as an SVG; a tap sends its point
   ({x, y}, a few bytes) to the server, and a later tap replaces it (one a second). The page
   asks for the question every few seconds (its step, axes and, once revealed, the answer);
   the taps of others stay on the projector. Runs only on that page (Dash loads every file of
   assets/ on its own pages too). */
(function () {
    const root = document.getElementById("hall-phone");
    if (!root) { return; }
    const API = "/api/lecture/hall/phone/" + root.dataset.hall;
    const POLL_MS = 3000;
    const SIZE = 320, PAD = 28;
    const svg = document.getElementById("hall-phone-axes");
    const NS = "http://www.w3.org/2000/svg";
    let question = null;
    let mine = null;  /* my last tap sent, [x, y] */

    const say = (id, text) => { document.getElementById(id).textContent = text; };
    const toPx = (q, x, y) => [
        PAD + (x - q.x[0]) / (q.x[1] - q.x[0]) * (SIZE - 2 * PAD),
        SIZE - PAD - (y - q.y[0]) / (q.y[1] - q.y[0]) * (SIZE - 2 * PAD)];
    function el(tag, attrs, text) {
        const e = document.createElementNS(NS, tag);
        Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
        if (text !== undefined) { e.textContent = text; }
        svg.appendChild(e);
        return e;
    }
    /* about five round ticks across [lo, hi] */
    function ticks(lo, hi) {
        const raw = (hi - lo) / 5;
        const mag = Math.pow(10, Math.floor(Math.log10(raw)));
        const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
        const out = [];
        for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) {
            out.push(Math.round(t / step) * step);
        }
        return out;
    }
    const label = v => String(Math.round(v * 1000) / 1000);

    function draw() {
        svg.replaceChildren();
        if (!question) { return; }
        const q = question;
        el("rect", {x: PAD, y: PAD, width: SIZE - 2 * PAD, height: SIZE - 2 * PAD,
                    fill: "#fff", stroke: "#333"});
        ticks(q.x[0], q.x[1]).forEach(t => {
            const [px] = toPx(q, t, q.y[0]);
            el("line", {x1: px, x2: px, y1: PAD, y2: SIZE - PAD, stroke: "#ddd"});
            el("text", {x: px, y: SIZE - PAD + 14, "text-anchor": "middle", class: "hall-tick"},
               label(t));
        });
        ticks(q.y[0], q.y[1]).forEach(t => {
            const [, py] = toPx(q, q.x[0], t);
            el("line", {x1: PAD, x2: SIZE - PAD, y1: py, y2: py, stroke: "#ddd"});
            el("text", {x: PAD - 4, y: py + 4, "text-anchor": "end", class: "hall-tick"},
               label(t));
        });
        if (mine) {
            const [px, py] = toPx(q, mine[0], mine[1]);
            el("circle", {cx: px, cy: py, r: 8, fill: "#d55e00", stroke: "#000"});
        }
        if (q.answer) {
            const [px, py] = toPx(q, q.answer[0], q.answer[1]);
            el("text", {x: px, y: py + 8, "text-anchor": "middle", "font-size": 28,
                        stroke: "#000", fill: "#fff"}, "★");
        }
    }

    function show(state) {
        const q = state.question;
        const same = q && question && q.step === question.step && q.x[0] === question.x[0] &&
            q.x[1] === question.x[1] && q.y[0] === question.y[0] && q.y[1] === question.y[1];
        if (!same) { mine = null; }
        question = q;
        say("hall-phone-title", q ? q.ask : "No question is open: wait for the lecturer.");
        say("hall-phone-prompt", q ? (q.revealed ? "The answer is the star." : q.prompt) : "");
        draw();
    }

    function poll() {
        fetch(API, {credentials: "same-origin"})
            .then(r => r.json()).then(show).catch(() => {});
    }

    svg.addEventListener("pointerdown", function (e) {
        if (!question || question.revealed) { return; }
        const box = svg.getBoundingClientRect();
        const sx = (e.clientX - box.left) / box.width * SIZE;
        const sy = (e.clientY - box.top) / box.height * SIZE;
        const q = question;
        const x = q.x[0] + (sx - PAD) / (SIZE - 2 * PAD) * (q.x[1] - q.x[0]);
        const y = q.y[0] + (SIZE - PAD - sy) / (SIZE - 2 * PAD) * (q.y[1] - q.y[0]);
        if (x < q.x[0] || x > q.x[1] || y < q.y[0] || y > q.y[1]) { return; }
        const point = [Math.round(x * 1e4) / 1e4, Math.round(y * 1e4) / 1e4];
        fetch(API + "/taps", {method: "POST", credentials: "same-origin",
                              headers: {"Content-Type": "application/json"},
                              body: JSON.stringify({x: point[0], y: point[1]})})
            .then(r => r.json().then(data => {
                if (r.ok) {
                    mine = point;
                    say("hall-phone-status", "Your answer: (" + point.join(", ") +
                        "). Tap again to change it.");
                } else {
                    say("hall-phone-status", data.error || ("HTTP " + r.status));
                }
                draw();
            })).catch(() => say("hall-phone-status", "No answer from the server: tap again."));
    });

    poll();
    window.setInterval(poll, POLL_MS);
})();
