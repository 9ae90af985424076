/* The lecture view's animations (/lecture): the play button (and p) sweeps the step's slider,
   or plays the training step's recorded frames; [ and ] set the speed. What it gives the
   other lecture scripts (window.bnvizLecture): stopPlaying, setSpeed. */
(function () {
    const CONFIG = window.bnvizConfig.lecture;  /* layouts/client_config.py */
    const IDS = CONFIG.ids;
    const set = (id, props) => window.dash_clientside.set_props(id, props);
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
    /* The slider sweep: its progress (0..1), advanced by the time between two ticks. */
    let sweep = null;  /* {progress, last, paused} */
    let playClicks = null;  /* the play button's n_clicks last seen */
    /* The training step's recorded frames (plotly frames of its figure): the play button
       plays them, pauses them, and plays them again from the start once all were shown.
       Each tick shows the frame the clock has reached, once the last one is drawn. */
    const graphDiv = () => document.querySelector("#" + IDS.GRAPH + " .js-plotly-plot");
    let frames = null;  /* {gd, position (frames, fractional), last, playing, drawing, ms} */
    function stopFrames() {
        if (frames) { frames.playing = false; }
        frames = null;
    }
    /* A new step, or a reset, stops the play button's sweep at once: a tick of it after the
       step changed would move the new step's slider. */
    function stopPlaying() {
        set(IDS.TIMER, {disabled: true});
        sweep = null;
        stopFrames();
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

    const clientside = (window.dash_clientside = window.dash_clientside || {});
    clientside.lecture = Object.assign(clientside.lecture || {}, {
        /* The play button sweeps the step's slider; each timer tick moves it one step
           (or plays the figure's frames: the training step). */
        play: function (clicks, _ticks, anim, _mu, _sigma) {
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
    });
    window.bnvizLecture = Object.assign(window.bnvizLecture || {}, {
        stopPlaying: stopPlaying, stopFrames: stopFrames, setSpeed: setSpeed});
})();
