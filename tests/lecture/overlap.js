// The plot's text boxes that overprint one another, as [[text a, text b], ...], plus the
// texts that stick out of the graph. Every visible <text> of the graph's SVG layers (tick
// labels, legend, titles, annotations, colour bar) is a box; two boxes overlap when they
// intersect by more than 1 px both ways. Run with the graph's id as arguments[0].
//
// With a page root's id as arguments[1], `page` says the same of every text of that page a
// reader sees (issue 46: type that grows must not break the screen): each text node's line
// boxes (HTML) and each SVG <text>, as {texts, outside, overlaps, clipped}:
// - outside: a text with a line past the viewport's edge;
// - overlaps: two texts whose boxes intersect by more than 1 px across and by more than a
//   tenth of the shorter box's height down (at least 2 px): a text's box holds its font's
//   ascent and descent, taller than its glyphs, so boxes touching at an axis' corner (two
//   tick labels) or at a tight line height are not a text printed over another;
// - clipped: a text cut by a box that hides or scrolls its overflow (its line past the
//   box's inside), an ellipsis that is active (text-overflow: ellipsis and scrollWidth >
//   clientWidth), or a line clamp that hides lines (scrollHeight > clientHeight).
const gd = document.getElementById(arguments[0]);
const frame = gd.getBoundingClientRect();
const visible = (el) => {
    const style = window.getComputedStyle(el);
    return !(style.display === "none" || style.visibility === "hidden" ||
             parseFloat(style.opacity) === 0);
};
const boxes = [];
for (const t of gd.querySelectorAll("svg text")) {
    const text = (t.textContent || "").trim();
    if (!text) { continue; }
    const style = window.getComputedStyle(t);
    if (!visible(t)) { continue; }
    const r = t.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) { continue; }
    boxes.push({text: text, r: r, size: parseFloat(style.fontSize)});
}
const overlaps = [];
for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) { overlaps.push([boxes[i].text, boxes[j].text]); }
    }
}
const outside = boxes.filter(b => b.r.left < frame.left - 1 || b.r.right > frame.right + 1 ||
    b.r.top < frame.top - 1 || b.r.bottom > frame.bottom + 1).map(b => b.text);
const small = boxes.filter(b => b.size < 18).map(b => b.text + " (" + b.size + "px)");

function pageTexts(root) {
    /* every text a reader sees under root: {text, el, rects} */
    const seen = (el) => {
        for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
            if (e.hidden || !visible(e)) { return false; }
        }
        return true;
    };
    const texts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode, el = node.parentElement;
        const text = (node.textContent || "").trim();
        if (!text || !el || el.closest("svg") || !seen(el)) { continue; }
        const range = document.createRange();
        range.selectNodeContents(node);
        const rects = Array.from(range.getClientRects()).filter(r => r.width >= 1 &&
                                                                      r.height >= 1);
        if (rects.length) { texts.push({text: text.slice(0, 40), el: el, rects: rects}); }
    }
    for (const t of root.querySelectorAll("svg text")) {
        const text = (t.textContent || "").trim();
        const r = t.getBoundingClientRect();
        if (text && r.width >= 1 && r.height >= 1 && seen(t)) {
            texts.push({text: text.slice(0, 40), el: t, rects: [r]});
        }
    }
    return texts;
}
function clippedBy(t) {
    /* what cuts the text t: an ancestor's hidden or scrolled overflow, an ellipsis, a clamp */
    for (let e = t.el; e && e !== document.body; e = e.parentElement) {
        if (e instanceof SVGElement) { continue; }
        const s = window.getComputedStyle(e);
        if (s.textOverflow === "ellipsis" && e.scrollWidth > e.clientWidth + 1) {
            return "ellipsis in " + (e.id || e.className);
        }
        const clamp = s.webkitLineClamp || s.getPropertyValue("-webkit-line-clamp");
        if (clamp && clamp !== "none" && e.scrollHeight > e.clientHeight + 1) {
            return "line clamp in " + (e.id || e.className);
        }
        const cutX = s.overflowX !== "visible", cutY = s.overflowY !== "visible";
        if (!cutX && !cutY) { continue; }
        const b = e.getBoundingClientRect();
        const left = b.left + e.clientLeft, top = b.top + e.clientTop;
        for (const r of t.rects) {
            if ((cutX && (r.left < left - 1 || r.right > left + e.clientWidth + 1)) ||
                    (cutY && (r.top < top - 1 || r.bottom > top + e.clientHeight + 1))) {
                return "cut by " + (e.id || e.className || e.tagName) + " (overflow " +
                    s.overflowX + " " + s.overflowY + ")";
            }
        }
    }
    return null;
}
function pageReport(root) {
    const vw = window.innerWidth, vh = window.innerHeight;
    const texts = pageTexts(root);
    const out = texts.filter(t => t.rects.some(r => r.left < -1 || r.top < -1 ||
                                                     r.right > vw + 1 || r.bottom > vh + 1))
        .map(t => t.text);
    const over = [];
    for (let i = 0; i < texts.length; i++) {
        for (let j = i + 1; j < texts.length; j++) {
            const hit = texts[i].rects.some(a => texts[j].rects.some(b =>
                Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) >
                    Math.max(2, 0.1 * Math.min(a.height, b.height))));
            if (hit) { over.push([texts[i].text, texts[j].text]); }
        }
    }
    const clipped = [];
    for (const t of texts) {
        const why = clippedBy(t);
        if (why) { clipped.push(t.text + ": " + why); }
    }
    return {texts: texts.length, outside: out, overlaps: over, clipped: clipped};
}
const pageRoot = arguments.length > 1 ? document.getElementById(arguments[1]) : null;
return {overlaps: overlaps, outside: outside, small: small, texts: boxes.length,
        page: pageRoot ? pageReport(pageRoot) : null};
