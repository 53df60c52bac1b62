// Filters apply as soon as they change; a delete button waits for its confirmation word.
// The server checks both anyway: this only saves a round trip. The import form reads its file
// here and sends it in batches of 1,000 to the admin API's batchCreate, showing the progress.
document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
  select.addEventListener("change", function () { select.form.submit(); });
});
document.querySelectorAll("input[data-confirm]").forEach(function (input) {
  var button = input.form.querySelector("button[type=submit]");
  function update() { button.disabled = input.value !== input.dataset.confirm; }
  input.addEventListener("input", update);
  update();
});
var importForm = document.getElementById("import");
if (importForm) {
  importForm.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = importForm.elements.file.files[0];
    var status = document.getElementById("import-status");
    var progress = document.getElementById("import-progress");
    var failures = document.getElementById("import-failures");
    failures.textContent = "";
    if (!file) { status.textContent = "Choose a file first."; return; }
    status.textContent = "Reading the file…";
    file.text().then(function (text) {
      var data;
      try { data = JSON.parse(text); } catch (e) { throw new Error("The file is not JSON."); }
      var users = Array.isArray(data.users) ? data.users : null;
      if (!users || users.length === 0) { throw new Error("The file has no users."); }
      var fields = importForm.elements;
      if (data.hashConfig) {
        if (!fields.signerKey.value) { fields.signerKey.value = data.hashConfig.signerKey || ""; }
        if (!fields.saltSeparator.value) { fields.saltSeparator.value = data.hashConfig.saltSeparator || ""; }
        if (data.hashConfig.rounds) { fields.rounds.value = data.hashConfig.rounds; }
        if (data.hashConfig.memoryCost) { fields.memoryCost.value = data.hashConfig.memoryCost; }
      }
      var withHashes = users.some(function (u) { return u.passwordHash; });
      var done = 0, refused = 0;
      progress.hidden = false;
      progress.max = users.length;
      function batch(start) {
        if (start >= users.length) {
          status.textContent = "Done: " + (done - refused) + " imported, " + refused + " refused, of " + users.length + ".";
          return;
        }
        var slice = users.slice(start, start + 1000).map(function (u) {
          var copy = Object.assign({}, u);
          if (copy.lastSignedInAt && !copy.lastLoginAt) { copy.lastLoginAt = copy.lastSignedInAt; }
          delete copy.lastSignedInAt;
          // Moving users between scopes: they take the scope of the page they are imported on.
          delete copy.tenantId;
          return copy;
        });
        var body = { users: slice };
        if (withHashes) {
          body.hashAlgorithm = "SCRYPT";
          body.signerKey = fields.signerKey.value;
          body.saltSeparator = fields.saltSeparator.value;
          body.rounds = Number(fields.rounds.value);
          body.memoryCost = Number(fields.memoryCost.value);
        }
        return fetch(importForm.dataset.import, {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-Tessera-CSRF": importForm.dataset.csrf },
          body: JSON.stringify(body)
        }).then(function (response) {
          return response.json().then(function (answer) {
            if (!response.ok) {
              throw new Error((answer.error && answer.error.message) || ("HTTP " + response.status));
            }
            (answer.error || []).forEach(function (failure) {
              refused += 1;
              var item = document.createElement("li");
              item.textContent = "User " + (start + failure.index + 1) + ": " + failure.message;
              failures.appendChild(item);
            });
            done += slice.length;
            progress.value = done;
            status.textContent = done + " of " + users.length + " sent, " + refused + " refused.";
            return batch(start + 1000);
          });
        });
      }
      status.textContent = "0 of " + users.length + " sent.";
      return batch(0);
    }).catch(function (error) {
      status.textContent = "Import stopped: " + error.message;
    });
  });
}
