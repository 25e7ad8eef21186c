// A click on a sortable table's header sorts its rows by that column: by the number a cell
// keeps in data-sort where it has one, else by its text; a second click reverses.
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("thead th");
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = !th.classList.contains("asc");
      heads.forEach(function (h) { h.classList.remove("asc", "desc"); });
      th.classList.add(asc ? "asc" : "desc");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        var td = row.cells[col];
        if (!td) return "";
        var n = td.getAttribute("data-sort");
        return n === null ? td.textContent : parseFloat(n);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
