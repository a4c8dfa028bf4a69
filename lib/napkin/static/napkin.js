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
  window.napkinDraw = function (id, spec) {
    var el = document.getElementById(id);
    if (!el) { return; }
    if (typeof window.vegaEmbed !== "function") {
      el.textContent = "The chart library (vega-bundle.js) did not load, so this chart cannot be drawn. " +
        "Rebuild the book with `make book`.";
      el.className += " napkin-chart-error";
      return;
    }
    var options = Object.assign({}, EMBED_OPTIONS, { downloadFileName: el.parentNode.id || id });
    window.vegaEmbed(el, spec, options).then(function () {
      el.setAttribute("data-drawn", "true");
    }).catch(function (err) {
      el.textContent = "This chart failed to draw: " + err.message;
      el.className += " napkin-chart-error";
    });
  };
})();
