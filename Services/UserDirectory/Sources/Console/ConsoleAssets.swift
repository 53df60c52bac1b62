/// The console's stylesheet and script, served from `/console/assets/` (the CSP allows scripts and
/// styles from the console's own origin only). The script is progressive enhancement: every page
/// works without it.
enum ConsoleAssets {
    static let css = """
        :root { --fg: #1c1e21; --muted: #5f6368; --line: #d7dbe0; --bg: #f6f7f9; --accent: #0b57d0;
          --danger: #b3261e; --ok: #146c2e; --warn: #8a5300; font-family: system-ui, sans-serif; }
        * { box-sizing: border-box; }
        body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.45; }
        a { color: var(--accent); }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
        header.top { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; padding: 10px 16px;
          background: #fff; border-bottom: 1px solid var(--line); }
        .brand { font-weight: 700; text-decoration: none; color: var(--fg); margin-right: auto; }
        .who { color: var(--muted); overflow-wrap: anywhere; }
        nav.scope { display: flex; flex-wrap: wrap; gap: 4px 16px; padding: 8px 16px; background: #fff;
          border-bottom: 1px solid var(--line); }
        nav.scope .scope-name { font-weight: 600; width: 100%; }
        nav.scope a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
        main { padding: 16px; max-width: 1200px; margin: 0 auto; }
        h1 { font-size: 1.5rem; margin: 8px 0 16px; overflow-wrap: anywhere; }
        h2 { font-size: 1.15rem; margin: 0 0 12px; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin: 0 0 16px; }
        .narrow { max-width: 420px; }
        label { display: block; font-weight: 600; margin: 8px 0 4px; }
        input, select, button, textarea { font: inherit; }
        textarea { width: 100%; padding: 8px; border: 1px solid #9aa0a6; border-radius: 6px; }
        textarea[aria-invalid="true"] { border-color: var(--danger); }
        .preview pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--bg); padding: 8px; }
        input:not([type=checkbox]), select { width: 100%; max-width: 420px; padding: 8px; border: 1px solid #9aa0a6;
          border-radius: 6px; background: #fff; }
        input[aria-invalid="true"] { border-color: var(--danger); }
        button { padding: 8px 14px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent);
          color: #fff; cursor: pointer; margin-top: 8px; min-height: 40px; }
        button.link { background: none; border: none; color: var(--accent); padding: 0; margin: 0; min-height: 0;
          text-decoration: underline; }
        button.danger { background: var(--danger); border-color: var(--danger); }
        button:disabled { opacity: .5; cursor: not-allowed; }
        .field-error, .error-text { color: var(--danger); margin: 4px 0; }
        .hint { color: var(--muted); font-size: .9rem; }
        .notice { background: #e8f0fe; border: 1px solid #aecbfa; border-radius: 6px; padding: 8px 12px; }
        form.inline { display: inline; }
        .filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: flex-end; margin-bottom: 12px; }
        .filters .field { flex: 1 1 180px; }
        .table-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
        td code { overflow-wrap: anywhere; }
        .badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: .8rem; background: #e8eaed; }
        .badge.disabled { background: #fce8e6; color: var(--danger); }
        .badge.anonymous { background: #fef7e0; color: var(--warn); }
        .badge.verified { background: #e6f4ea; color: var(--ok); }
        .pager { display: flex; gap: 16px; margin: 12px 0; }
        .facts { display: grid; grid-template-columns: minmax(120px, max-content) 1fr; gap: 4px 16px; margin: 0; }
        .facts dt { color: var(--muted); }
        .facts dd { margin: 0; overflow-wrap: anywhere; }
        .actions { display: flex; flex-wrap: wrap; gap: 8px; }
        form.danger { margin-top: 16px; border-top: 1px solid var(--line); padding-top: 8px; }
        .check { display: flex; gap: 8px; align-items: center; margin: 6px 0; }
        .check label { display: inline; font-weight: 400; margin: 0; }
        .check input { width: 20px; height: 20px; }
        fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 12px; }
        .chart { width: 100%; max-width: 720px; height: auto; }
        .chart .bar { fill: var(--accent); }
        .chart text { font-size: 11px; fill: var(--fg); }
        .confirm-row label { font-weight: 400; }
        .secret { border-color: var(--warn); }
        .secret-value { display: block; overflow-wrap: anywhere; padding: 8px; background: #fef7e0; }
        @media (max-width: 600px) {
          main { padding: 10px; }
          th, td { padding: 6px; }
          .facts { grid-template-columns: 1fr; }
          .facts dd { margin-bottom: 6px; }
        }
        """

    static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="7" height="7" fill="#0b57d0"/>\
        <rect x="9" width="7" height="7" fill="#5f6368"/><rect y="9" width="7" height="7" fill="#5f6368"/>\
        <rect x="9" y="9" width="7" height="7" fill="#0b57d0"/></svg>
        """

    static let js = """
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
        """
}
