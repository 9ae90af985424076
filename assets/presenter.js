/* The presenter view (/lecture/presenter) and the projector window that follows it (issue 31).

   The presenter's every step, slider move (made by the lecturer: its own animation's ticks
   are not sent, the projector plays its own), play, reset, split, theme and blank goes to
   the projector's window over a BroadcastChannel between the two tabs: no server round trip
   for the sync. The projector (/lecture in another window of the same browser) applies each
   message as its own keys would. The presenter's timer runs here too. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const CHANNEL = CONFIG.channel;
    const channel = ("BroadcastChannel" in window) ? new BroadcastChannel(CHANNEL) : null;
    const isPresenter = () => !!document.getElementById(IDS.PRESENTER);
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

    const SLIDER_IDS = CONFIG.sliders;  /* mu, sigma, batch, depth -> the slider's id */
    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        presenter: {
            /* A change on the presenter's page, sent to the projector's window. */
            broadcast: function (step, mu, sigma, batch, depth, theme, split, reset, play) {
                const trig = window.dash_clientside.callback_context.triggered_id;
                const values = {mu: mu, sigma: sigma, batch: batch, depth: depth};
                if (trig === IDS.STEP) { send("step", step); }
                else if (trig === IDS.THEME) { send("theme", theme); }
                else if (trig === IDS.SPLIT) { send("split", split === true); }
                else if (trig === IDS.RESET) { send("reset", reset); }
                else if (trig === IDS.PLAY) { send("play", play); }
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
            if (isPresenter() || !document.getElementById(IDS.ROOT)) { return; }
            if (m.kind === "step" && Number.isInteger(m.value)) {
                if (window.bnvizLecture) { window.bnvizLecture.go(m.value); }
                else { set(IDS.STEP, {data: m.value}); }
            } else if (m.kind === "slider" && m.value && typeof m.value.value === "number" &&
                       Object.values(SLIDER_IDS).includes(m.value.id)) {
                set(m.value.id, {value: m.value.value});
            } else if (m.kind === "theme" && (m.value === "light" || m.value === "dark")) {
                set(IDS.THEME, {data: m.value});
            } else if (m.kind === "split") {
                set(IDS.SPLIT, {data: m.value === true});
            } else if (m.kind === "reset") {
                set(IDS.RESET, {data: Date.now()});
            } else if (m.kind === "play") {
                const play = document.getElementById(IDS.PLAY);
                if (play && !play.disabled) { play.click(); }
            } else if (m.kind === "snapshots" && m.value && Array.isArray(m.value.items)) {
                set(IDS.SNAPSHOTS, {data: m.value});
            } else if (m.kind === "goto" && m.value && typeof m.value.query === "string" &&
                       window.bnvizLecture && window.bnvizLecture.navigate) {
                const keep = typeof m.value.keep === "string" ? m.value.keep : "";
                window.bnvizLecture.navigate("/lecture?" + m.value.query +
                                             (keep ? "&" + keep : ""));
            } else if (m.kind === "blank") {
                const blank = document.getElementById(IDS.BLANK);
                if (blank) { blank.hidden = !blank.hidden; }
            }
        };
    }

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
})();
