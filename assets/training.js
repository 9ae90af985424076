/* The explorer's live training player ("Watch it learn"; callbacks/explorer/training.py).

   Each frame is one POST to the frame route: the explorer's controls, the tab's settings and
   the trainers' state from the last answer.  The answer is drawn here with Plotly.react, and
   the next frame is asked for as soon as an answer is in (before it is drawn), one request in
   flight at a time and at most one every frameMs: a frame costs its request or its redraw,
   whichever is longer, and no Dash round.  The run (the trainers' state, every kept frame's
   numbers and figure) lives here while the page does; a page shown again (a new graph) starts
   a new run.  While playing, the counter follows every frame and the curves and the replay
   slider every curveFrames frames; when the run stops (pause, step, an error, the tab hidden)
   the player hands the last figures and the slider's range to the page's graphs
   (dash_clientside.set_props), so that Dash holds what is shown.  The replay slider
   redraws a recorded frame from the figures kept here (the last maxHistory), exactly as it
   was shown and without a request; it is disabled while frames come.  Everything drawn is
   the server's figure. */
(function () {
    const player = window.bnvizTraining = window.bnvizTraining || {
        playing: false,  // play pressed and not paused
        running: false,  // a run of frames (or one step) under way
        resetNext: false,
        config: null,    // route, ids, pacing (from the callback)
        request: null,   // what the next frame request carries besides the state
        run: null,       // {graph, state, history, figures, pending, counter, frames}
        lastAsk: 0,
    };
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const plotDiv = (id) => document.querySelector("#" + id + " .js-plotly-plot");
    /* the page's components, while the page is there (an answer may come after it left) */
    const setProps = (id, props) => {
        if (player.config && document.getElementById(player.config.ids.play)) {
            window.dash_clientside.set_props(id, props);
        }
    };
    const webgl = (function () {
        try {
            return !!document.createElement("canvas").getContext("webgl");
        } catch (e) {
            return false;
        }
    })();

    /* The run the player continues: its own while it holds one for the graph on the page,
       else a new one (a page just shown: a new graph). */
    function attach() {
        const graph = plotDiv(player.config.ids.graph);
        if (!player.run || player.run.graph !== graph) {
            player.run = {graph: graph, state: null, history: [], figures: [], pending: [],
                          counter: null, frames: 0};
        }
    }

    async function ask() {
        const wait = player.lastAsk + player.config.frameMs - performance.now();
        if (wait > 0) { await sleep(wait); }
        player.lastAsk = performance.now();
        const body = Object.assign({}, player.request, {state: player.run.state,
                                                        reset: player.resetNext});
        player.resetNext = false;
        for (;;) {
            let response;
            try {
                response = await fetch(player.config.route, {
                    method: "POST", headers: {"Content-Type": "application/json"},
                    body: JSON.stringify(body)});
            } catch (e) {
                return {error: "the server did not answer: press play to try again"};
            }
            if ((response.status === 429 || response.status === 503) && player.playing &&
                    visible()) {
                // a crowd behind one address, or a busy server: slow down, keep playing
                const after = parseFloat(response.headers.get("Retry-After")) || 1;
                await sleep(1000 * Math.min(after, 30));
                continue;
            }
            let answer = null;
            try {
                answer = await response.json();
            } catch (e) { /* not JSON: a proxy's page */ }
            if (response.ok && answer && answer.figure) { return answer; }
            return {error: (answer && answer.error) ||
                    "the server answered " + response.status + ": press play to try again"};
        }
    }

    /* Take an answer into the run; false when it is an error (shown, and the run stops). */
    function accept(answer) {
        const ids = player.config.ids;
        const run = player.run;
        if (answer.error) {
            player.playing = false;
            run.message = true;  /* cleared by the next frame that arrives */
            setProps(ids.message, {children: answer.error});
            setProps(ids.play, {children: "▶ play"});
            return false;
        }
        if (run.message) { setProps(ids.message, {children: ""}); }
        run.message = false;
        run.state = answer.state;
        run.counter = answer.counter;
        run.frames += 1;
        if (answer.fresh) {
            run.history = [answer.entry];
            run.figures = [answer.figure];
            run.pending = [];
        } else {
            run.history.push(answer.entry);
            run.figures.push(answer.figure);
            if (run.history.length > player.config.maxHistory) {
                run.history.shift();
                run.figures.shift();
            }
            run.pending.push(...answer.points);
        }
        return true;
    }

    function extendCurves(curves) {
        const run = player.run;
        if (!run.pending.length || !curves || !curves.data) { return; }
        const traces = [...new Set(run.pending.map((p) => p[0]))].sort((a, b) => a - b);
        const xs = traces.map((t) => run.pending.filter((p) => p[0] === t).map((p) => p[1]));
        const ys = traces.map((t) => run.pending.filter((p) => p[0] === t).map((p) => p[2]));
        run.pending = [];
        window.Plotly.extendTraces(curves, {x: xs, y: ys}, traces);
    }

    async function draw(answer) {
        const ids = player.config.ids;
        const run = player.run;
        const graph = plotDiv(ids.graph);
        const curves = plotDiv(ids.curves);
        const figure = answer.figure;
        if (!webgl) {
            figure.data.forEach((t) => { if (t.type === "scattergl") { t.type = "scatter"; } });
        }
        setProps(ids.counter, {children: answer.counter});
        if (!graph || !window.Plotly) {
            setProps(ids.graph, {figure: figure});
            return;
        }
        await window.Plotly.react(graph, figure.data, figure.layout);
        if (answer.fresh && curves) {
            await window.Plotly.react(curves, answer.curves.data, answer.curves.layout);
        } else if (run.frames % player.config.curveFrames === 0) {
            extendCurves(curves);
            const last = run.history.length - 1;
            setProps(ids.scrub, {max: last, value: last});
        }
    }

    /* The run stopped: the graphs' figures take what the page shows. */
    function sync() {
        const ids = player.config.ids;
        const run = player.run;
        if (!run || !run.figures.length || !document.getElementById(ids.play)) { return; }
        const curves = plotDiv(ids.curves);
        extendCurves(curves);
        const last = run.figures.length - 1;
        setProps(ids.scrub, {max: last, value: last, disabled: false});
        setProps(ids.counter, {children: run.counter});
        setProps(ids.graph, {figure: run.figures[last]});
        if (curves && curves.data) {
            setProps(ids.curves, {figure: {data: curves.data, layout: curves.layout}});
        }
    }

    function visible() {
        const graph = player.run && player.run.graph;
        return !!graph && document.body.contains(graph) && graph.offsetParent !== null;
    }

    async function go() {
        player.running = true;
        setProps(player.config.ids.scrub, {disabled: true});
        try {
            let next = ask();
            for (;;) {
                const answer = await next;
                if (!accept(answer)) { break; }
                const more = player.playing && visible();
                next = more ? ask() : null;  // asked for before this one is drawn
                await draw(answer);
                // play or reset pressed while the last frame was drawn
                if (!next && (player.resetNext || (player.playing && visible()))) {
                    next = ask();
                }
                if (!next) { break; }
            }
        } catch (e) {
            setProps(player.config.ids.message, {children: "the frame could not be drawn: " +
                                                 String(e).slice(0, 120)});
            player.playing = false;
        } finally {
            player.running = false;
            if (player.playing) {  // hidden while playing: paused
                player.playing = false;
                setProps(player.config.ids.play, {children: "▶ play"});
            }
            sync();
        }
    }

    /* The replay slider: recorded frame ``index`` as it was drawn; the counter's text. */
    player.replay = function (index) {
        const noUpdate = window.dash_clientside.no_update;
        const run = player.run;
        if (player.running || !run || typeof index !== "number" || !run.figures[index]) {
            return noUpdate;
        }
        const graph = plotDiv(player.config.ids.graph);
        const last = run.figures.length - 1;
        if (graph && window.Plotly) {
            window.Plotly.react(graph, run.figures[index].data, run.figures[index].layout);
        }
        return index === last ? run.counter : "replaying step " + run.history[index].step +
            " (frame " + (index + 1) + " of " + run.figures.length + ")";
    };

    /* The tab's buttons and the controls a frame request carries (the clientside callback of
       callbacks/explorer/training.py; args in its order). */
    player.control = function (config, args) {
        const noUpdate = window.dash_clientside.no_update;
        const trig = (window.dash_clientside.callback_context || {}).triggered_id;
        const n = config.controls.length;
        const controls = {};
        config.controls.forEach((name, i) => { controls[name] = args[3 + i]; });
        const [lr, batch, optimizer, steps, side, projector] = args.slice(3 + n);
        player.config = config;
        player.request = {controls: controls, lr: lr, batch: batch, optimizer: optimizer,
                          steps: steps, side: side === true, projector: projector === true};
        const ids = config.ids;
        if (trig === ids.play) {
            if (player.playing) {
                player.playing = false;  // the frame in flight is drawn, then the run stops
                return "▶ play";
            }
            if (!player.running) { attach(); }
            player.playing = true;
            if (!player.running) { go(); }
            return "⏸ pause";
        }
        if (trig === ids.step || trig === ids.reset) {
            if (trig === ids.reset) { player.resetNext = true; }
            if (!player.running) {
                attach();
                go();
            }
        }
        return noUpdate;
    };
})();
