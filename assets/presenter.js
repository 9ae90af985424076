/* The presenter view (/lecture/presenter) and the projector window that follows it (issue 31).

   The presenter's every step, slider move (made by the lecturer: its own animation's ticks
   are not sent, the projector plays its own), play, reset, split, theme and blank goes to
   the projector's window over a BroadcastChannel between the two tabs: no server round trip
   for the sync. The projector (/lecture in another window of the same browser) applies each
   message as its own keys would. The presenter's timer runs here too. */
(function () {
    const CHANNEL = "bnviz-lecture";
    const channel = ("BroadcastChannel" in window) ? new BroadcastChannel(CHANNEL) : null;
    const isPresenter = () => !!document.getElementById("lecture-presenter");
    const set = (id, props) => window.dash_clientside.set_props(id, props);

    /* a slider the lecturer touched in the last moments: its changes are sent (a drag's
       end counts from its release) */
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

    function send(kind, value) {
        if (channel && isPresenter()) { channel.postMessage({kind: kind, value: value}); }
    }
    window.bnvizPresenter = {send: send, isPresenter: isPresenter};

    const SLIDER_IDS = {mu: "lecture-mu", sigma: "lecture-sigma", batch: "lecture-batch",
                        depth: "lecture-depth"};
    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        presenter: {
            /* A change on the presenter's page, sent to the projector's window. */
            broadcast: function (step, mu, sigma, batch, depth, theme, split, reset, play) {
                const trig = window.dash_clientside.callback_context.triggered_id;
                const values = {mu: mu, sigma: sigma, batch: batch, depth: depth};
                if (trig === "lecture-step") { send("step", step); }
                else if (trig === "lecture-theme") { send("theme", theme); }
                else if (trig === "lecture-split") { send("split", split === true); }
                else if (trig === "lecture-reset") { send("reset", reset); }
                else if (trig === "lecture-play") { send("play", play); }
                else {
                    for (const name in SLIDER_IDS) {
                        if (trig === SLIDER_IDS[name] && Date.now() - userSlid < 1500) {
                            send("slider", {id: SLIDER_IDS[name], value: values[name]});
                        }
                    }
                }
                return Date.now();
            },
        },
    });

    /* The projector: every page but the presenter's own follows the messages. */
    if (channel) {
        channel.onmessage = function (e) {
            const m = e.data || {};
            if (isPresenter() || !document.getElementById("lecture-root")) { return; }
            if (m.kind === "step" && Number.isInteger(m.value)) {
                if (window.bnvizLecture) { window.bnvizLecture.go(m.value); }
                else { set("lecture-step", {data: m.value}); }
            } else if (m.kind === "slider" && m.value && /^lecture-(mu|sigma|batch|depth)$/
                       .test(m.value.id) && typeof m.value.value === "number") {
                set(m.value.id, {value: m.value.value});
            } else if (m.kind === "theme" && (m.value === "light" || m.value === "dark")) {
                set("lecture-theme", {data: m.value});
            } else if (m.kind === "split") {
                set("lecture-split", {data: m.value === true});
            } else if (m.kind === "reset") {
                set("lecture-reset", {data: Date.now()});
            } else if (m.kind === "play") {
                const play = document.getElementById("lecture-play");
                if (play && !play.disabled) { play.click(); }
            } else if (m.kind === "snapshots" && m.value && Array.isArray(m.value.items)) {
                set("lecture-snapshots", {data: m.value});
            } else if (m.kind === "goto" && m.value && typeof m.value.query === "string" &&
                       window.bnvizLecture && window.bnvizLecture.navigate) {
                const keep = typeof m.value.keep === "string" ? m.value.keep : "";
                window.bnvizLecture.navigate("/lecture?" + m.value.query +
                                             (keep ? "&" + keep : ""));
            } else if (m.kind === "blank") {
                const blank = document.getElementById("lecture-blank");
                if (blank) { blank.hidden = !blank.hidden; }
            }
        };
    }

    /* The presenter's clock: elapsed time since the page opened (a click starts it again),
       against the minutes planned to the end of the step shown. */
    let started = Date.now();
    document.addEventListener("click", function (e) {
        if (e.target && e.target.id === "lecture-clock") { started = Date.now(); }
    }, true);
    const mmss = (s) => Math.floor(s / 60) + ":" + String(Math.floor(s % 60)).padStart(2, "0");
    setInterval(function () {
        const clock = document.getElementById("lecture-clock");
        if (!clock) { return; }
        const elapsed = (Date.now() - started) / 1000;
        const plan = document.getElementById("lecture-planned");
        const planned = plan ? Number(plan.getAttribute("data-planned-seconds")) : NaN;
        let text = mmss(elapsed);
        if (Number.isFinite(planned) && planned > 0) {
            text += " / " + mmss(planned) + " planned";
            clock.classList.toggle("behind", elapsed > planned);
        }
        clock.textContent = text;
    }, 1000);
})();
