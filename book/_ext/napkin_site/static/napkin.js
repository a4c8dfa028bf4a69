/* Draws the book's figures with the Vega libraries the site serves itself
   (vega-bundle.js, written at build time from the pinned vl-convert), so a
   page draws its charts with no network at all. */
(function () {
  "use strict";
  var EMBED_OPTIONS = {
    renderer: "svg",
    actions: { export: true, source: false, compiled: false, editor: false },
    downloadFileName: "chart"
  };
  // Vega does not wrap titles or reflow legends: on a narrow column, break long titles
  // into lines and stack legend entries, so nothing is cut off on a phone.
  function wrap(text, width, fontPx) {
    var perLine = Math.max(16, Math.floor((width - 12) / (0.62 * fontPx)));
    var lines = [], line = "";
    text.split(/\s+/).forEach(function (word) {
      if (line && (line + " " + word).length > perLine) { lines.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    if (line) { lines.push(line); }
    return lines.length > 1 ? lines : text;
  }

  // x-axis titles wrap too (bold 12 px) to ``width``, the plot's, on which they are
  // centred; legend labels are limited; layers and concatenations are walked.
  function wrapAxisTitles(node, width, legendRoom) {
    if (!node || typeof node !== "object") { return; }
    var x = node.encoding && node.encoding.x;
    // centred on the plot, which is narrower than the figure: wrap well inside it
    if (x && typeof x.title === "string") { x.title = wrap(x.title, width, 13.5); }
    // legend labels cannot wrap: cut them short (with an ellipsis) rather than off
    Object.keys(node.encoding || {}).forEach(function (channel) {
      var legend = node.encoding[channel] && node.encoding[channel].legend;
      if (legend && typeof legend === "object") {
        legend.labelLimit = Math.min(legend.labelLimit || Infinity, legendRoom);
      }
    });
    ["layer", "hconcat", "vconcat", "concat"].forEach(function (key) {
      (node[key] || []).forEach(function (child) { wrapAxisTitles(child, width, legendRoom); });
    });
  }

  // On a phone, long y labels (chip names) are cut at a third of the width, and the
  // legend, which starts where the plot starts, gets what is left: a first guess, which
  // roomForLegend corrects once the chart is drawn and the plot's left edge is known.
  // yRoom: what fitYLabels gave the widest y labels, when more than that third.
  function legendLimit(width, yRoom) {
    var base = width < 560 ? Math.round(width * 0.6 - 70) : width - 60;
    return yRoom ? Math.min(base, Math.round(width - yRoom - 50)) : base;
  }

  // Long y-axis labels (chips, models, runs) are cut with an ellipsis at Vega's labelLimit,
  // and a reader loses the end of a name. Each nominal y axis gets the width its longest
  // label needs, up to a cap (two fifths of the chart, half on a phone); past the cap its
  // labels break over lines where the rows are tall enough, else they take a smaller type.
  var measurer = null;
  function textWidth(text, fontPx, font) {
    measurer = measurer || document.createElement("canvas").getContext("2d");
    measurer.font = fontPx + "px " + font;
    return measurer.measureText(text).width;
  }

  function valuesOf(spec, field) {
    var found = [];
    var tables = Object.keys(spec.datasets || {}).map(function (k) { return spec.datasets[k]; });
    (function collect(node) {
      if (!node || typeof node !== "object") { return; }
      if (node.data && Array.isArray(node.data.values)) { tables.push(node.data.values); }
      ["layer", "hconcat", "vconcat", "concat"].forEach(function (key) {
        (node[key] || []).forEach(collect);
      });
    })(spec);
    tables.forEach(function (rows) {
      rows.forEach(function (row) {
        if (row && row[field] !== undefined && row[field] !== null &&
            found.indexOf(String(row[field])) < 0) { found.push(String(row[field])); }
      });
    });
    return found;
  }

  // A label broken into lines of at most maxPx, at spaces and after hyphens (model names
  // are long hyphenated words: "Qwen3-Coder-30B-A3B-Instruct").
  function lines(text, maxPx, fontPx, font) {
    var out = [], line = "";
    text.split(/\s+/).forEach(function (word, w) {
      word.split(/(?<=-)/).forEach(function (piece, p) {
        var next = line + (line && p === 0 && w > 0 ? " " : "") + piece;
        if (line && textWidth(next, fontPx, font) > maxPx) { out.push(line); line = piece; }
        else { line = next; }
      });
    });
    if (line) { out.push(line); }
    return out;
  }

  // Each label of ``labels`` broken into lines of at most maxPx: the lines, the most lines
  // any label takes, and the widest line.
  function breakAll(labels, maxPx, fontPx, font) {
    var broken = {}, most = 0, widest = 0;
    labels.forEach(function (l) {
      broken[l] = lines(l, maxPx, fontPx, font);
      most = Math.max(most, broken[l].length);
      broken[l].forEach(function (line) { widest = Math.max(widest, textWidth(line, fontPx, font)); });
    });
    return { broken: broken, most: most, widest: widest };
  }

  // The y axis's labels, in order of preference: on one line in the room they usually get
  // (a third of a phone's chart, less on a wide one); broken over lines in that room, where
  // the rows are tall enough; on one line up to a cap (half a phone's chart, two fifths of a
  // wide one), which narrows the plot; broken over lines up to the cap; in smaller type.
  function fitAxisLabels(axis, labels, width, rowPx, fontPx, font) {
    var soft = Math.round(width * (width < 560 ? 0.35 : 0.3));
    var cap = Math.round(width * (width < 560 ? 0.5 : 0.4));
    var lineHeight = Math.round(fontPx * 1.1);
    var widest = Math.max.apply(null, labels.map(function (l) {
      return textWidth(l, fontPx, font); }));
    function broken(room) {
      var b = breakAll(labels, room - 4, fontPx, font);
      if (b.most * lineHeight > rowPx - 2 || b.widest + 4 > room) { return false; }
      axis.labelExpr = "(" + JSON.stringify(b.broken) + ")[datum.value] || datum.label";
      axis.labelLimit = Math.ceil(b.widest) + 4;
      axis.labelLineHeight = lineHeight;
      return true;
    }
    if (widest + 4 <= soft) { axis.labelLimit = Math.ceil(widest) + 4; return; }
    if (broken(soft)) { return; }
    if (widest + 4 <= cap) { axis.labelLimit = Math.ceil(widest) + 4; return; }
    if (broken(cap)) { return; }
    var smaller = Math.max(9, Math.floor(fontPx * (cap - 4) / widest));
    axis.labelFontSize = smaller;
    axis.labelLimit = Math.ceil(widest * smaller / fontPx) + 4;
  }

  function fitYLabels(s, width) {
    var config = s.config || {}, room = 0;
    var font = config.font || "sans-serif";
    var plotHeight = typeof s.height === "number" ? s.height : 300;
    (function visit(node, height) {
      if (!node || typeof node !== "object") { return; }
      height = typeof node.height === "number" ? node.height : height;
      var y = node.encoding && node.encoding.y;
      if (y && typeof y.field === "string" && (y.type === "nominal" || y.type === "ordinal") &&
          y.axis !== null && !(y.axis && y.axis.labelExpr)) {
        var labels = valuesOf(s, y.field);
        if (labels.length) {  // else the labels are computed in the chart: left as they are
          var axis = y.axis = Object.assign({}, y.axis);
          var fontPx = axis.labelFontSize || (config.axisY || {}).labelFontSize ||
            (config.axis || {}).labelFontSize || 11;
          fitAxisLabels(axis, labels, width, height / labels.length, fontPx, font);
          room = Math.max(room, axis.labelLimit);
        }
      }
      ["layer", "hconcat", "vconcat", "concat"].forEach(function (key) {
        (node[key] || []).forEach(function (child) { visit(child, height); });
      });
    })(s, plotHeight);
    return room > width * 0.35 ? room : 0;
  }

  // The spec fitted to ``width`` px, and the room its legend labels were given.
  function fitToWidth(spec, width, legendRoom) {
    var s = JSON.parse(JSON.stringify(spec));
    var yRoom = fitYLabels(s, width);
    legendRoom = legendRoom || legendLimit(width, yRoom);
    // an x title is centred on the plot, narrower than the figure: wrap it well inside
    wrapAxisTitles(s, Math.min(width * 0.6, width - yRoom - 50), legendRoom);
    if (s.title) {
      var t = typeof s.title === "string" ? { text: s.title } : s.title;
      if (typeof t.text === "string") { t.text = wrap(t.text, width, 16.5); }  // bold 15 px
      if (typeof t.subtitle === "string") { t.subtitle = wrap(t.subtitle, width, 12); }
      s.title = t;
    }
    if (width < 560) {
      s.config = s.config || {};
      s.config.legend = Object.assign({}, s.config.legend,
                                      { columns: 1, labelLimit: legendRoom });
      s.config.axisY = Object.assign({}, s.config.axisY, { labelLimit: Math.round(width * 0.35) });
      // a title computed as the reader drags a slider cannot be wrapped here: smaller type
      s.config.title = Object.assign({}, s.config.title, { fontSize: 13 });
    }
    return {spec: s, legendRoom: legendRoom};
  }

  // The width a cut-short legend label could have: from where the drawn legend starts to
  // the chart's right edge, less its symbol. Zero when nothing was cut or no more fits.
  function roomForLegend(el, limit) {
    var labels = el.querySelectorAll(".role-legend-label text");
    var cut = Array.prototype.some.call(labels, function (t) {
      return /\u2026$/.test(t.textContent);
    });
    var legend = el.querySelector(".role-legend");
    var svg = el.querySelector("svg.marks");  // narrower than el: the actions menu sits beside it
    if (!cut || !legend || !svg) { return 0; }
    var right = svg.getBoundingClientRect().right;
    var room = Math.floor(right - legend.getBoundingClientRect().left - 36);
    return room > limit + 8 ? room : 0;
  }

  // The site's dark mode (pydata's data-theme on <html>) gets the dark chart colours that
  // the dark exports use (napkin-theme.js, written at build time from napkin.charts).
  function isDark() { return document.documentElement.getAttribute("data-theme") === "dark"; }

  function merge(base, patch) {
    var out = Object.assign({}, base);
    Object.keys(patch).forEach(function (key) {
      var value = patch[key];
      out[key] = value && typeof value === "object" && !Array.isArray(value)
        ? merge(out[key] || {}, value) : value;
    });
    return out;
  }

  function themed(spec, dark) {
    if (!dark || !window.napkinDarkConfig) { return spec; }
    return Object.assign({}, spec, { config: merge(spec.config || {}, window.napkinDarkConfig) });
  }

  var charts = {};  // id -> {spec, dark, result}: what a switch of light and dark redraws

  function draw(id) {
    var el = document.getElementById(id), chart = charts[id];
    var options = Object.assign({}, EMBED_OPTIONS, { downloadFileName: el.parentNode.id || id });
    var width = el.clientWidth || 600;
    var spec = themed(chart.spec, chart.dark = isDark());
    var turn = chart.turn = (chart.turn || 0) + 1;  // a later draw supersedes this one
    if (chart.result) { chart.result.finalize(); chart.result = null; }
    el.removeAttribute("data-drawn");
    var fitted = fitToWidth(spec, width);
    window.vegaEmbed(el, fitted.spec, options).then(function (result) {
      var room = turn === chart.turn && roomForLegend(el, fitted.legendRoom);
      if (!room) { return result; }
      result.finalize();
      return window.vegaEmbed(el, fitToWidth(spec, width, room).spec, options);
    }).then(function (result) {
      if (turn !== chart.turn) { result.finalize(); return; }
      chart.result = result;
      el.setAttribute("data-drawn", "true");
    }).catch(function (err) {
      el.textContent = "This chart failed to draw: " + err.message;
      el.className += " napkin-chart-error";
    });
  }

  window.napkinDraw = function (id, spec) {
    var el = document.getElementById(id);
    if (!el) { return; }
    if (typeof window.vegaEmbed !== "function") {
      el.textContent = "The chart library (vega-bundle.js) did not load, so this chart cannot be drawn. " +
        "Rebuild the book with `make book`.";
      el.className += " napkin-chart-error";
      return;
    }
    charts[id] = { spec: spec };
    draw(id);
  };

  // Opened from file://, the browser refuses the fetches Sphinx's search makes for result
  // snippets, one console error each; the results themselves work, so skip the snippets.
  if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }

  new MutationObserver(function () {
    Object.keys(charts).forEach(function (id) {
      if (charts[id].dark !== isDark()) { draw(id); }
    });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
})();
