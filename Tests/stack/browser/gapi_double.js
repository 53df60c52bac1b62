/*
 * gapi_double.js — a test double of https://apis.google.com/js/api.js (Google's gapi loader) and of the one
 * gapi library the Firebase JS SDK's popup/redirect code needs from it, gapi.iframes. The whole-stack browser
 * tests (Tests/stack/sdk_browser.py) answer every request for https://apis.google.com/js/api.js* of a browser
 * context with this file, so it runs in BOTH roles:
 *
 *   parent: the app page (Tests/stack/browser/app.html, which behaves like firebase 12.18.0). The SDK loads
 *           `api.js?onload=__iframefcbNNN`, calls gapi.load('gapi.iframes', ...), getContext().open({url:
 *           <emulator>/emulator/auth/iframe?...}, cb), then restyle, ping, register('authEvent'),
 *           send('webStorageSupport').
 *   child:  Tessera's relay iframe page (/emulator/auth/iframe, /__/auth/iframe). It loads `api.js` (with a
 *           window.gapi_onload function, or with ?onload=NAME), calls gapi.load('gapi.iframes', ...),
 *           getContext().getParentIframe(), register('webStorageSupport'), send('authEvent').
 *
 * Real gapi's RPC wire format is undocumented, so the two sides of this double speak a protocol of their own.
 * Both pages must therefore load this double (one real gapi and one double cannot talk to each other).
 *
 * Reference: docs/oauth-flows.md §4.1 (what the SDK calls, and the surface this double gives). SDK = firebase-js-sdk
 * @ 6f865964 (firebase 12.18.0, @firebase/auth 1.13.5); paths are relative to packages/auth/src/.
 *
 * ---------------------------------------------------------------------------------------------------------------
 * SURFACE
 * ---------------------------------------------------------------------------------------------------------------
 * Bootstrap (docs/oauth-flows.md §4.1)
 *   On load the script defines window.gapi = {load}. It then calls window[NAME]() when its own URL
 *   (document.currentScript.src) has ?onload=NAME, the way the SDK's loader expects
 *   (platform_browser/iframe/gapi.ts:94-108). Otherwise it calls window.gapi_onload() if that is a function, which
 *   is what the emulator's iframe page relies on. The call is asynchronous: after DOMContentLoaded if the document
 *   is still loading, so a page may define gapi_onload in a script after the api.js tag, else on the next task.
 *   gapi.iframes does NOT exist before gapi.load('gapi.iframes') completes, as with real gapi. The SDK checks
 *   gapi.iframes.Iframe to decide whether the library is loaded (gapi.ts:82).
 *
 * gapi.load(features, opts | callback) (docs/oauth-flows.md §4.1; gapi.ts:64-79)
 *   opts = {callback, timeout, ontimeout}. The callback runs asynchronously with no arguments, after which
 *   gapi.iframes is defined. Failure injection: with options.loadTimeout the callback never runs and ontimeout
 *   runs after min(timeout, options.loadTimeoutMs). Features other than gapi.iframes are accepted and only run the
 *   callback.
 *
 * gapi.iframes (after load)
 *   Iframe                        the handle constructor; truthy, as the SDK checks.
 *   CROSS_ORIGIN_IFRAMES_FILTER   a function returning true. It is accepted as the last argument of open, register
 *                                 and send, and ignored (iframe.ts:86; popup_redirect.ts:142,166).
 *   getContext()                  a singleton Context.
 *
 * Context.open(options, callback) (parent side; iframe.ts:82-117)
 *   options = {where, url, messageHandlersFilter, attributes: {style: {...}, 'aria-hidden', tabindex}, dontclear}.
 *   It creates an <iframe>, copies attributes.style into el.style and sets the other attributes with
 *   setAttribute, and sets id and name to "I<n>_<ms>" like real gapi. The src is `url` plus what real gapi adds
 *   (docs/oauth-flows.md §4.1, [obs]):
 *     - in the query, &usegapi=1&jsh=<opaque>; options.gapiQuery === false leaves it out;
 *     - the fragment #id=<id>&_gfid=<id>&parent=<encodeURIComponent(location.origin)>&pfname=&rpctoken=<digits>.
 *   The iframe is appended to `where` (default document.body), and the handle is created before that, so no early
 *   message from the child can be missed. It returns Promise.resolve(callback(handle)), or the handle when there is
 *   no callback or the callback returns undefined. The SDK takes its Iframe from that promise
 *   (popup_redirect.ts:131), so a rejected ping rejects _openIframe.
 *
 * Context.getParentIframe() (child side; emulator iframe page, TOOLS handlers.ts:277)
 *   A handle whose peer is window.parent. Its targetOrigin is the `parent` fragment parameter and its rpctoken is
 *   the `rpctoken` fragment parameter of location.hash. When they are missing (the page was not opened by a
 *   Context.open of this double), the handle is inert: it sends nothing and records an error in the log.
 *
 * Iframe handle (both sides; docs/oauth-flows.md §4.1)
 *   restyle(style, cb)            resolves [] (cb([]) too). It only records the call; nothing is restyled.
 *   ping(cb, data)                posts a ping every 100 ms (for at most 60 s) until the peer answers pong, then
 *                                 calls cb([]) and resolves []. On the parent side pings start once the <iframe>
 *                                 fired 'load' (before that its window is about:blank and would drop them); the
 *                                 retry covers a child whose gapi is not loaded yet. The peer answers only once
 *                                 ITS gapi.load('gapi.iframes') has completed. options.noPong makes a double
 *                                 never answer, which simulates an iframe that never loads: the SDK then rejects
 *                                 auth/network-request-failed after 5 s (iframe.ts:30,103-105).
 *   register(type, handler, f)    handler(message, handle) is called for every inbound request of `type`. Its
 *                                 return value is the reply; a thenable is awaited. A handler that throws (the
 *                                 SDK's authEvent handler throws auth/invalid-auth-event on a message without
 *                                 authEvent, popup_redirect.ts:136), or whose promise rejects, contributes no
 *                                 entry and is recorded in the log. Requests that arrive before any handler of
 *                                 their type is registered are BUFFERED and delivered, in order, on register
 *                                 (docs/oauth-flows.md §4.1: the iframe may send its initial authEvent before the SDK
 *                                 registers).
 *   unregister(type, handler)     removes the handler, or all handlers of the type when none is given.
 *   send(type, data, cb, f)       posts the request. The peer replies with the ARRAY of its handlers' results
 *                                 (one entry per registered handler, in registration order). cb(responses) runs
 *                                 inside try/catch, because the SDK's webStorageSupport callback always throws
 *                                 (popup_redirect.ts:164). The emulator iframe reads responses[length-1].status
 *                                 and the SDK reads responses[0].webStorageSupport. It returns a Promise of the
 *                                 responses. A request is never answered while no handler is registered for it
 *                                 (it stays buffered at the peer). A request is posted once, not retried: send
 *                                 only after ping succeeded (as the SDK does), or from the child (its parent is
 *                                 always loaded).
 *   getIframeEl(), getOrigin()    the <iframe> element (parent side) and the peer's origin.
 *
 * Wire protocol between the two doubles (docs/oauth-flows.md §4.1)
 *   window.postMessage(msg, <peer origin>), always with an explicit targetOrigin. msg = {__fakeGapi: 1, rpctoken,
 *   kind: 'ping'|'pong'|'req'|'res', id, type, data | responses}. A receiver ignores any message that is not
 *   tagged __fakeGapi === 1, or whose rpctoken names no handle of this window, or whose event.source is not that
 *   handle's peer window, or whose event.origin is not that handle's peer origin. So the handler popup's
 *   {eventType: 'sendAuthEvent', ...} postMessage to the iframe, and any other unrelated postMessage, never
 *   reaches gapi handlers.
 *
 * Observability
 *   gapi.__fake = {version, options, loaded, log, handles()}. `log` holds up to 500 entries {t, dir: 'out'|'in'|
 *   'note', kind, type, id, rpctoken, data | responses | error}. Tests read it to check exactly what crossed the
 *   channel, e.g. that the iframe sent one initial authEvent and what the SDK's handler replied.
 *
 * Options (failure injection)
 *   window.__FAKE_GAPI_OPTIONS = {loadTimeout, loadTimeoutMs, loadDelayMs, noPong, gapiQuery}. sdk_browser.py
 *   prepends this assignment to the script it serves. The options apply to every page of the browser context.
 */
(function () {
  'use strict';

  var VERSION = 'tessera-gapi-double/1';
  var LOG_LIMIT = 500;
  var PING_INTERVAL_MS = 100;
  var PING_GIVE_UP_MS = 60000;
  // What real gapi adds to the query of an iframe it opens (docs/oauth-flows.md §4.1); the value is opaque to the page.
  var JSH = 'm;/_/scs/abc-static/_/js/k=gapi.lb.en.TESSERA_DOUBLE.O/d=1/rs=TESSERA/m=__features__';

  var thisScript = document.currentScript;
  var scriptSrc = (thisScript && thisScript.src) || '';

  if (window.gapi && window.gapi.__fake) {
    // Loaded a second time in the same window (e.g. the page has its own <script> and the SDK injects another):
    // keep the existing state, just honour this copy's onload parameter.
    bootstrap(scriptSrc);
    return;
  }

  var options = window.__FAKE_GAPI_OPTIONS || {};
  var state = {
    loaded: false,        // gapi.load('gapi.iframes') completed in this window
    handles: {},          // rpctoken -> Handle
    parentHandle: null,   // child side: the handle getParentIframe() returned
    log: [],
    nextId: 1,
    frameCounter: 0
  };

  function record(entry) {
    entry.t = Date.now();
    state.log.push(entry);
    if (state.log.length > LOG_LIMIT) {
      state.log.splice(0, state.log.length - LOG_LIMIT);
    }
  }

  function describeError(err) {
    if (!err) {
      return String(err);
    }
    return (err.code ? err.code + ': ' : '') + (err.message || String(err));
  }

  function newId() {
    return String(state.nextId++) + '.' + String(Math.floor(Math.random() * 1e9));
  }

  function parseParams(text) {
    var out = {};
    (text || '').replace(/^[?#]/, '').split('&').forEach(function (pair) {
      if (!pair) {
        return;
      }
      var at = pair.indexOf('=');
      var key = at < 0 ? pair : pair.slice(0, at);
      var value = at < 0 ? '' : pair.slice(at + 1);
      try {
        out[decodeURIComponent(key)] = decodeURIComponent(value.replace(/\+/g, ' '));
      } catch (e) {
        out[key] = value;
      }
    });
    return out;
  }

  function cloneable(value) {
    // Handler results cross postMessage; anything the structured clone cannot copy goes through JSON instead.
    try {
      return JSON.parse(JSON.stringify(value === undefined ? null : value));
    } catch (e) {
      return null;
    }
  }

  // ------------------------------------------------------------------------------------------------------------
  // Iframe handle
  // ------------------------------------------------------------------------------------------------------------

  /** @constructor */
  function Iframe(spec) {
    this._peer = spec.peer;             // () => Window
    this._peerOrigin = spec.peerOrigin; // explicit postMessage targetOrigin, and the expected event.origin
    this._rpctoken = spec.rpctoken;
    this._el = spec.el || null;
    this._frameLoaded = !spec.el;       // parent side: the <iframe> fired 'load' (its document is the peer's)
    this._inert = !!spec.inert;
    this._handlers = {};                // type -> [handler]
    this._buffer = {};                  // type -> [request message] awaiting a handler
    this._pending = {};                 // request id -> function(responses)
    this._pingWaiters = {};             // ping id -> function()
  }

  Iframe.prototype.getIframeEl = function () {
    return this._el;
  };

  Iframe.prototype.getOrigin = function () {
    return this._peerOrigin;
  };

  Iframe.prototype._post = function (message) {
    message.__fakeGapi = 1;
    message.rpctoken = this._rpctoken;
    if (this._inert) {
      record({dir: 'note', kind: message.kind, type: message.type, id: message.id,
              error: 'inert handle (no parent/rpctoken in the fragment): message not sent'});
      return;
    }
    var peer = this._peer();
    if (!peer) {
      record({dir: 'note', kind: message.kind, type: message.type, id: message.id, error: 'no peer window'});
      return;
    }
    try {
      peer.postMessage(message, this._peerOrigin);
    } catch (err) {
      if (message.responses !== undefined) {
        message.responses = cloneable(message.responses);
        peer.postMessage(message, this._peerOrigin);
      } else if (message.data !== undefined) {
        message.data = cloneable(message.data);
        peer.postMessage(message, this._peerOrigin);
      } else {
        throw err;
      }
    }
    if (message.kind !== 'ping') {
      record({dir: 'out', kind: message.kind, type: message.type, id: message.id, rpctoken: this._rpctoken,
              data: message.data, responses: message.responses});
    }
  };

  Iframe.prototype._receive = function (message) {
    if (message.kind === 'ping') {
      if (state.loaded && !options.noPong) {
        record({dir: 'in', kind: 'ping', id: message.id, rpctoken: this._rpctoken});
        this._post({kind: 'pong', id: message.id});
      }
      return;
    }
    record({dir: 'in', kind: message.kind, type: message.type, id: message.id, rpctoken: this._rpctoken,
            data: message.data, responses: message.responses});
    if (message.kind === 'pong') {
      var waiter = this._pingWaiters[message.id];
      if (waiter) {
        waiter();
      }
      return;
    }
    if (message.kind === 'res') {
      var pending = this._pending[message.id];
      if (pending) {
        delete this._pending[message.id];
        pending(message.responses);
      }
      return;
    }
    if (message.kind === 'req') {
      var handlers = this._handlers[message.type];
      if (handlers && handlers.length) {
        this._dispatch(message);
      } else {
        (this._buffer[message.type] = this._buffer[message.type] || []).push(message);
        record({dir: 'note', kind: 'req', type: message.type, id: message.id, error: 'buffered: no handler yet'});
      }
    }
  };

  Iframe.prototype._dispatch = function (message) {
    var self = this;
    var outcomes = (this._handlers[message.type] || []).slice().map(function (handler) {
      var value;
      try {
        value = handler(message.data, self);
      } catch (err) {
        record({dir: 'note', kind: 'handler-threw', type: message.type, id: message.id, error: describeError(err)});
        return Promise.resolve({ok: false});
      }
      return Promise.resolve(value).then(function (resolved) {
        return {ok: true, value: resolved};
      }, function (err) {
        record({dir: 'note', kind: 'handler-rejected', type: message.type, id: message.id,
                error: describeError(err)});
        return {ok: false};
      });
    });
    Promise.all(outcomes).then(function (results) {
      var responses = results.filter(function (r) { return r.ok; }).map(function (r) { return r.value; });
      self._post({kind: 'res', id: message.id, type: message.type, responses: responses});
    });
  };

  Iframe.prototype.register = function (type, handler, filter) {
    void filter;
    (this._handlers[type] = this._handlers[type] || []).push(handler);
    record({dir: 'note', kind: 'register', type: type, rpctoken: this._rpctoken});
    var buffered = this._buffer[type];
    if (buffered && buffered.length) {
      delete this._buffer[type];
      for (var i = 0; i < buffered.length; i++) {
        this._dispatch(buffered[i]);
      }
    }
  };

  Iframe.prototype.unregister = function (type, handler) {
    var list = this._handlers[type] || [];
    this._handlers[type] = handler ? list.filter(function (h) { return h !== handler; }) : [];
    record({dir: 'note', kind: 'unregister', type: type, rpctoken: this._rpctoken});
  };

  Iframe.prototype.send = function (type, data, callback, filter) {
    void filter;
    var self = this;
    var id = newId();
    return new Promise(function (resolve) {
      self._pending[id] = function (responses) {
        var list = Array.isArray(responses) ? responses : [];
        if (typeof callback === 'function') {
          try {
            callback(list);
          } catch (err) {
            // The SDK's webStorageSupport callback throws internal-error on purpose (popup_redirect.ts:164).
            record({dir: 'note', kind: 'callback-threw', type: type, id: id, error: describeError(err)});
          }
        }
        resolve(list);
      };
      self._post({kind: 'req', id: id, type: type, data: data});
    });
  };

  Iframe.prototype.ping = function (callback, data) {
    var self = this;
    var id = newId();
    record({dir: 'out', kind: 'ping', id: id, rpctoken: this._rpctoken});
    return new Promise(function (resolve) {
      var done = false;
      var started = Date.now();
      var timer = null;
      self._pingWaiters[id] = function () {
        if (done) {
          return;
        }
        done = true;
        delete self._pingWaiters[id];
        clearInterval(timer);
        if (typeof callback === 'function') {
          try {
            callback([]);
          } catch (err) {
            record({dir: 'note', kind: 'callback-threw', type: 'ping', id: id, error: describeError(err)});
          }
        }
        resolve([]);
      };
      function attempt() {
        if (done) {
          return;
        }
        if (Date.now() - started > PING_GIVE_UP_MS) {
          clearInterval(timer);
          record({dir: 'note', kind: 'ping', id: id, error: 'no pong: gave up'});
          return;
        }
        if (!self._frameLoaded) {
          return;  // still about:blank: a post now would only be dropped (with a console warning)
        }
        self._post({kind: 'ping', id: id, data: data === undefined ? null : data});
      }
      timer = setInterval(attempt, PING_INTERVAL_MS);
      attempt();
    });
  };

  Iframe.prototype.restyle = function (style, callback) {
    record({dir: 'note', kind: 'restyle', data: cloneable(style), rpctoken: this._rpctoken});
    if (typeof callback === 'function') {
      try {
        callback([]);
      } catch (err) {
        record({dir: 'note', kind: 'callback-threw', type: 'restyle', error: describeError(err)});
      }
    }
    return Promise.resolve([]);
  };

  // ------------------------------------------------------------------------------------------------------------
  // Context
  // ------------------------------------------------------------------------------------------------------------

  function withGapiQuery(url) {
    if (options.gapiQuery === false) {
      return url;
    }
    var hashAt = url.indexOf('#');
    var base = hashAt < 0 ? url : url.slice(0, hashAt);
    var hash = hashAt < 0 ? '' : url.slice(hashAt);
    var extra = 'usegapi=1&jsh=' + encodeURIComponent(JSH);
    return base + (base.indexOf('?') < 0 ? '?' : '&') + extra + hash;
  }

  /** @constructor */
  function Context() {}

  Context.prototype.open = function (openOptions, callback) {
    var opts = openOptions || {};
    var el = document.createElement('iframe');
    var frameId = 'I' + String(state.frameCounter++) + '_' + String(Date.now());
    var attributes = opts.attributes || {};
    Object.keys(attributes).forEach(function (name) {
      if (name === 'style' && attributes.style && typeof attributes.style === 'object') {
        Object.keys(attributes.style).forEach(function (prop) {
          el.style[prop] = attributes.style[prop];
        });
      } else {
        el.setAttribute(name, String(attributes[name]));
      }
    });
    el.id = frameId;
    el.name = frameId;
    var rpctoken = String(10000000 + Math.floor(Math.random() * 89999999));
    var peerOrigin = new URL(opts.url, location.href).origin;
    var fragment = 'id=' + frameId + '&_gfid=' + frameId + '&parent=' + encodeURIComponent(location.origin) +
      '&pfname=&rpctoken=' + rpctoken;
    var url = withGapiQuery(String(opts.url));
    var src = url + (url.indexOf('#') < 0 ? '#' : '&') + fragment;
    var handle = new Iframe({
      peer: function () { return el.contentWindow; },
      peerOrigin: peerOrigin,
      rpctoken: rpctoken,
      el: el
    });
    state.handles[rpctoken] = handle;
    el.addEventListener('load', function () { handle._frameLoaded = true; });
    el.src = src;
    (opts.where || document.body).appendChild(el);
    record({dir: 'note', kind: 'open', data: {url: opts.url, src: src, id: frameId}, rpctoken: rpctoken});
    var result;
    try {
      result = typeof callback === 'function' ? callback(handle) : handle;
    } catch (err) {
      return Promise.reject(err);
    }
    return Promise.resolve(result === undefined ? handle : result);
  };

  Context.prototype.getParentIframe = function () {
    if (state.parentHandle) {
      return state.parentHandle;
    }
    var params = parseParams(location.hash);
    var inert = window.parent === window || !params.parent || !params.rpctoken;
    var handle = new Iframe({
      peer: function () { return window.parent; },
      peerOrigin: params.parent || 'null',
      rpctoken: params.rpctoken || '',
      inert: inert
    });
    if (inert) {
      record({dir: 'note', kind: 'getParentIframe',
              error: 'no parent window, or no parent/rpctoken in location.hash: the handle is inert'});
    } else {
      state.handles[handle._rpctoken] = handle;
      record({dir: 'note', kind: 'getParentIframe', data: {parent: params.parent}, rpctoken: params.rpctoken});
    }
    state.parentHandle = handle;
    return handle;
  };

  var context = new Context();

  function crossOriginIframesFilter() {
    return true;
  }

  function defineIframes() {
    if (window.gapi.iframes) {
      return;
    }
    window.gapi.iframes = {
      Iframe: Iframe,
      Context: Context,
      CROSS_ORIGIN_IFRAMES_FILTER: crossOriginIframesFilter,
      getContext: function () { return context; }
    };
  }

  // ------------------------------------------------------------------------------------------------------------
  // Message intake: only tagged messages from a known peer, with its rpctoken and origin
  // ------------------------------------------------------------------------------------------------------------

  window.addEventListener('message', function (event) {
    var message = event.data;
    if (!message || typeof message !== 'object' || message.__fakeGapi !== 1 ||
        typeof message.rpctoken !== 'string') {
      return;
    }
    var handle = state.handles[message.rpctoken];
    if (!handle || handle._inert) {
      return;
    }
    if (event.source !== handle._peer() || event.origin !== handle._peerOrigin) {
      record({dir: 'note', kind: 'rejected', type: message.type, id: message.id,
              error: 'source/origin mismatch (origin ' + event.origin + ')'});
      return;
    }
    handle._receive(message);
  });

  // ------------------------------------------------------------------------------------------------------------
  // gapi.load and bootstrap
  // ------------------------------------------------------------------------------------------------------------

  function load(features, loadOptions) {
    var opts = typeof loadOptions === 'function' ? {callback: loadOptions} : (loadOptions || {});
    var wanted = String(features || '').split(':');
    record({dir: 'note', kind: 'load', data: {features: String(features), timeout: opts.timeout}});
    if (options.loadTimeout) {
      var wait = Math.min(Number(opts.timeout) || 0, options.loadTimeoutMs == null ? Infinity : options.loadTimeoutMs);
      setTimeout(function () {
        record({dir: 'note', kind: 'load', error: 'ontimeout (injected)'});
        if (typeof opts.ontimeout === 'function') {
          opts.ontimeout();
        }
      }, wait === Infinity ? 0 : wait);
      return;
    }
    setTimeout(function () {
      if (wanted.indexOf('gapi.iframes') >= 0) {
        defineIframes();
        state.loaded = true;
      }
      if (typeof opts.callback === 'function') {
        opts.callback();
      }
    }, Number(options.loadDelayMs) || 0);
  }

  window.gapi = window.gapi || {};
  window.gapi.load = load;
  window.gapi.__fake = {
    version: VERSION,
    options: options,
    log: state.log,
    get loaded() { return state.loaded; },
    handles: function () {
      return Object.keys(state.handles).map(function (token) {
        var h = state.handles[token];
        return {rpctoken: token, peerOrigin: h._peerOrigin, types: Object.keys(h._handlers),
                buffered: Object.keys(h._buffer)};
      });
    }
  };

  function bootstrap(src) {
    var onloadName = null;
    try {
      onloadName = new URL(src, location.href).searchParams.get('onload');
    } catch (e) {
      onloadName = null;
    }
    function run() {
      if (onloadName) {
        if (typeof window[onloadName] === 'function') {
          window[onloadName]();
        } else {
          if (state) {
            record({dir: 'note', kind: 'bootstrap', error: 'onload=' + onloadName + ' is not a function'});
          }
        }
      } else if (typeof window.gapi_onload === 'function') {
        window.gapi_onload();
      }
    }
    if (document.readyState === 'loading') {
      document.addEventListener('DOMContentLoaded', function () { setTimeout(run, 0); });
    } else {
      setTimeout(run, 0);
    }
  }

  bootstrap(scriptSrc);
})();
