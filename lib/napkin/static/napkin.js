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

  // x-axis titles wrap too (bold 12 px), legend labels are limited; layers and
  // concatenations are walked.
  function wrapAxisTitles(node, width, legendRoom) {
    if (!node || typeof node !== "object") { return; }
    var x = node.encoding && node.encoding.x;
    // centred on the plot, which is narrower than the figure: wrap well inside it
    if (x && typeof x.title === "string") { x.title = wrap(x.title, width * 0.6, 13.5); }
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
  function legendLimit(width) { return width < 560 ? Math.round(width * 0.6 - 70) : width - 60; }

  function fitToWidth(spec, width, legendRoom) {
    var s = JSON.parse(JSON.stringify(spec));
    legendRoom = legendRoom || legendLimit(width);
    wrapAxisTitles(s, width, legendRoom);
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
    return s;
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
    window.vegaEmbed(el, fitToWidth(spec, width), options).then(function (result) {
      var room = turn === chart.turn && roomForLegend(el, legendLimit(width));
      if (!room) { return result; }
      result.finalize();
      return window.vegaEmbed(el, fitToWidth(spec, width, room), options);
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
