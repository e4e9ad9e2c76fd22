// Requirement IDs typed into the search box: Enter jumps straight to the requirement's anchor
// (the search index splits "STD-LIM-1" into words). The map is filled in by gen_docs.py.
(function () {
  var IDS = /*IDS*/{};
  var script = document.currentScript;
  var root = new URL("../", script ? script.src : location.href);  // this file is assets/…
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || !e.target || !e.target.matches || !e.target.matches("input.md-search__input")) return;
    var id = e.target.value.trim().toUpperCase();
    if (!IDS[id]) return;
    e.preventDefault();
    e.stopPropagation();
    location.href = new URL(IDS[id] + "#" + id, root).href;
  }, true);
})();
