/// The two scripts of the hosted handler and relay iframe (docs/oauth-flows.md, "Web"), served from
/// Tessera's own origin so the pages' CSP allows no inline script. The handler page carries what it
/// delivers as a JSON data block (`#tessera-auth-event`), never as code.
enum AuthHandlerScripts {
    /// The handler page, after the provider answered:
    /// - `popup`: the app's relay iframe is a frame of `window.opener` on Tessera's origin, named by
    ///   the API key and app name in its URL; the auth event is posted to it (target origin: this
    ///   origin only), and it hands it to the SDK through gapi. The SDK closes the popup.
    /// - `redirect`: the event waits in this origin's `sessionStorage` under
    ///   `firebase:redirectEvent:<apiKey>:<appName>`, where the relay iframe of the page the browser
    ///   returns to finds it; then back to the app's page.
    /// - `app`: a mobile SDK's URL (the Apple SDK's deep link, the Android SDK's intent).
    static let handler = #"""
        (function () {
          "use strict";
          var block = document.getElementById("tessera-auth-event");
          if (!block) return;
          var data = JSON.parse(block.textContent);
          function show(id) {
            var nodes = document.querySelectorAll("[data-state]");
            for (var i = 0; i < nodes.length; i++) nodes[i].hidden = nodes[i].getAttribute("data-state") !== id;
            document.body.setAttribute("data-outcome", id);
          }
          if (data.mode === "popup") {
            var opener = window.opener;
            if (!opener) { show("no-opener"); return; }
            var sent = 0;
            for (var i = 0; i < opener.frames.length; i++) {
              var frame = opener.frames[i];
              try {
                // Only frames of this origin can be read; the others throw and are skipped.
                if (frame.location.origin !== location.origin) continue;
                if (!/\/auth\/iframe$/.test(frame.location.pathname)) continue;
                var params = new URLSearchParams(frame.location.search);
                if (params.get("apiKey") !== data.apiKey || params.get("appName") !== data.appName) continue;
                frame.postMessage({
                  eventType: "sendAuthEvent",
                  data: { authEvent: data.authEvent, storageKey: data.storageKey }
                }, location.origin);
                sent++;
              } catch (e) { /* a frame of another origin */ }
            }
            show(sent > 0 ? "done" : "no-opener");
          } else if (data.mode === "redirect") {
            try {
              sessionStorage.setItem("firebase:redirectEvent:" + data.storageKey, JSON.stringify(data.authEvent));
            } catch (e) { show("storage"); return; }
            location.replace(data.redirectUrl);
          } else if (data.mode === "app") {
            location.replace(data.url);
          }
        })();

        """#

    /// The relay iframe (`/__/auth/iframe`, `/emulator/auth/iframe`), as the SDK loads it into the
    /// app's page: with gapi's iframes library it registers `webStorageSupport`, sends the one
    /// initial `authEvent` the SDK waits for (a stored redirect event, or `unknown` with
    /// `auth/no-auth-event`), and relays the events the handler popup posts. Only messages from this
    /// origin are taken. A first send nobody answers (the SDK not registered yet) is sent again a few
    /// times; an answer of `ERROR` (no consumer, a duplicate) is final.
    static let iframe = #"""
        (function () {
          "use strict";
          var params = new URLSearchParams(location.search);
          var storageKey = params.get("apiKey") + ":" + params.get("appName");
          var parentIframe = null;
          var waiting = [];
          function storageWorks() {
            try {
              sessionStorage.setItem("tessera:probe", "1");
              sessionStorage.removeItem("tessera:probe");
              return true;
            } catch (e) { return false; }
          }
          function send(authEvent, attempt) {
            parentIframe.send("authEvent", { type: "authEvent", authEvent: authEvent }, function (responses) {
              if ((!responses || responses.length === 0) && attempt < 8) {
                setTimeout(function () { send(authEvent, attempt + 1); }, 250 * (attempt + 1));
              }
            }, gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER);
          }
          function start() {
            parentIframe = gapi.iframes.getContext().getParentIframe();
            parentIframe.register("webStorageSupport", function () {
              return { status: "ACK", webStorageSupport: storageWorks() };
            }, gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER);
            var stored = null;
            try {
              var key = "firebase:redirectEvent:" + storageKey;
              var raw = sessionStorage.getItem(key);
              if (raw) { sessionStorage.removeItem(key); stored = JSON.parse(raw); }
            } catch (e) { stored = null; }
            send(stored || {
              type: "unknown", eventId: null, urlResponse: null, sessionId: null, postBody: null,
              tenantId: null, error: { code: "auth/no-auth-event", message: "No redirect event." }
            }, 0);
            for (var i = 0; i < waiting.length; i++) send(waiting[i], 0);
            waiting = [];
          }
          window.addEventListener("message", function (event) {
            if (event.origin !== location.origin) return;
            var message = event.data;
            if (!message || message.eventType !== "sendAuthEvent" || !message.data) return;
            if (message.data.storageKey !== storageKey || !message.data.authEvent) return;
            if (parentIframe) send(message.data.authEvent, 0); else waiting.push(message.data.authEvent);
          });
          window.gapi_onload = function () {
            gapi.load("gapi.iframes", { callback: start, timeout: 10000, ontimeout: function () {} });
          };
        })();

        """#
}
