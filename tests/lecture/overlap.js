// The plot's text boxes that overprint one another, as [[text a, text b], ...], plus the
// texts that stick out of the graph. Every visible <text> of the graph's SVG layers (tick
// labels, legend, titles, annotations, colour bar) is a box; two boxes overlap when they
// intersect by more than 1 px both ways. Run with the graph's id as arguments[0].
const gd = document.getElementById(arguments[0]);
const frame = gd.getBoundingClientRect();
const boxes = [];
for (const t of gd.querySelectorAll("svg text")) {
    const text = (t.textContent || "").trim();
    if (!text) { continue; }
    const style = window.getComputedStyle(t);
    if (style.display === "none" || style.visibility === "hidden" ||
        parseFloat(style.opacity) === 0) { continue; }
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
return {overlaps: overlaps, outside: outside, small: small, texts: boxes.length};
