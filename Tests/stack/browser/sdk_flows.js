/*
 * sdk_flows.js — the behaviour of an app built on the Firebase JS SDK 12.18.0 (@firebase/auth 1.13.5) in emulator
 * mode, for the OAuth popup and redirect flows. The real SDK cannot be installed here (no npm registry). This
 * file reproduces what its sources do, step by step and in the same order:
 *
 *   initializeAuth(app, {persistence: browserLocalPersistence, popupRedirectResolver: browserPopupRedirectResolver})
 *   connectAuthEmulator(auth, <emulator>)          auth.tenantId = <tenantId>
 *   signInWithPopup / linkWithPopup / reauthenticateWithPopup
 *   signInWithRedirect / linkWithRedirect / reauthenticateWithRedirect / getRedirectResult
 *   (plus signInAnonymously, signInWithEmailAndPassword, signInWithCustomToken, signOut, reload, getIdToken, which
 *   give a test a signed-in user to link or reauthenticate)
 *
 * Page: app.html?emulator=http://127.0.0.1:PORT&apiKey=K[&appName=N][&tenantId=T][&appId=A][&authDomain=D][&lang=L]
 *       [&widgetPaths=hosted]
 *
 * The app persists its user in localStorage (browserLocalPersistence). getAuth() would prefer IndexedDB, but the
 * stored JSON is the same either way. Storage keys, URL parameters, request bodies, headers, error mapping, event
 * matching and timeouts follow the SDK. Comments cite SDK file:line: SDK = firebase/firebase-js-sdk @ 6f865964,
 * paths relative to packages/auth/src/. Contract summary: docs/oauth-flows.md §4.1.
 *
 * Left out, because nothing in these flows depends on them: App Check (#fac fragment, X-Firebase-AppCheck), the
 * heartbeat header (X-Firebase-Client), reCAPTCHA Enterprise (password sign-in sends the plain request, as the
 * SDK does while no reCAPTCHA config is loaded), beforeAuthStateChanged middleware, proactive token refresh,
 * multi-tab storage events, and the emulator warning banner.
 *
 * Harness-only deviation: widgetPaths=hosted makes the app use <emulator>/__/auth/handler and
 * <emulator>/__/auth/iframe in place of /emulator/auth/handler and /emulator/auth/iframe, so a test can exercise
 * Tessera's hosted aliases. The SDK itself would use https://<authDomain>/__/auth/... there (core/util/handler.ts:
 * 130-136; platform_browser/iframe/iframe.ts:56-58).
 *
 * Test surface: window.__sdk. See the SURFACE comment at the end of this file.
 */
(function () {
  'use strict';

  // ==============================================================================================================
  // Constants (SDK sources)
  // ==============================================================================================================

  var SDK_VERSION = '12.18.0';                                  // packages/firebase/package.json
  var API_HOST = 'identitytoolkit.googleapis.com';              // DefaultConfig.API_HOST
  var TOKEN_API_HOST = 'securetoken.googleapis.com';            // DefaultConfig.TOKEN_API_HOST
  var GAPI_SCRIPT = 'https://apis.google.com/js/api.js';         // platform_browser/index.ts:140
  var EMULATOR_WIDGET_PATH = 'emulator/auth/handler';           // core/util/handler.ts:41
  var EMULATED_IFRAME_PATH = 'emulator/auth/iframe';            // platform_browser/iframe/iframe.ts:32
  var HOSTED_WIDGET_PATH = '__/auth/handler';                   // core/util/handler.ts:34
  var HOSTED_IFRAME_PATH = '__/auth/iframe';                    // platform_browser/iframe/iframe.ts:31
  var PING_TIMEOUT = [5000, 15000];                             // iframe.ts:30 Delay(5000, 15000)
  var NETWORK_TIMEOUT = [30000, 60000];                         // gapi.ts:25 Delay(30000, 60000)
  var POLL_WINDOW_CLOSE_TIMEOUT = [2000, 10000];                // platform_browser/strategies/popup.ts:58
  var AUTH_EVENT_TIMEOUT = 8000;                                // popup.ts:55-57 _Timeout.AUTH_EVENT
  var DEFAULT_API_TIMEOUT = [30000, 60000];                     // api/index.ts:124
  var TOKEN_REFRESH_BUFFER = 30000;                             // core/user/token_manager.ts:31-33
  var EVENT_DUPLICATION_CACHE_DURATION_MS = 10 * 60 * 1000;     // core/auth/auth_event_manager.ts:30
  var IFRAME_ATTRIBUTES = {                                     // iframe.ts:34-43
    style: {position: 'absolute', top: '-100px', width: '1px', height: '1px'},
    'aria-hidden': 'true',
    tabindex: '-1'
  };
  var HARNESS_JOURNAL_KEY = 'tessera-harness:journal';          // harness-only (sessionStorage, survives redirects)

  var AuthEventType = {                                         // model/popup_redirect.ts:48-57
    LINK_VIA_POPUP: 'linkViaPopup',
    LINK_VIA_REDIRECT: 'linkViaRedirect',
    REAUTH_VIA_POPUP: 'reauthViaPopup',
    REAUTH_VIA_REDIRECT: 'reauthViaRedirect',
    SIGN_IN_VIA_POPUP: 'signInViaPopup',
    SIGN_IN_VIA_REDIRECT: 'signInViaRedirect',
    UNKNOWN: 'unknown',
    VERIFY_APP: 'verifyApp'
  };
  var OperationType = {LINK: 'link', REAUTHENTICATE: 'reauthenticate', SIGN_IN: 'signIn'};  // model/enums.ts

  // Server error code -> AuthErrorCode value (api/errors.ts:134-236 SERVER_ERROR_MAP, values from core/errors.ts).
  var SERVER_ERROR_MAP = {
    CREDENTIAL_MISMATCH: 'custom-token-mismatch', MISSING_CUSTOM_TOKEN: 'internal-error',
    INVALID_IDENTIFIER: 'invalid-email', MISSING_CONTINUE_URI: 'internal-error',
    INVALID_PASSWORD: 'wrong-password', MISSING_PASSWORD: 'missing-password',
    INVALID_LOGIN_CREDENTIALS: 'invalid-credential', EMAIL_EXISTS: 'email-already-in-use',
    PASSWORD_LOGIN_DISABLED: 'operation-not-allowed', INVALID_IDP_RESPONSE: 'invalid-credential',
    INVALID_PENDING_TOKEN: 'invalid-credential', FEDERATED_USER_ID_ALREADY_LINKED: 'credential-already-in-use',
    MISSING_REQ_TYPE: 'internal-error', EMAIL_NOT_FOUND: 'user-not-found',
    RESET_PASSWORD_EXCEED_LIMIT: 'too-many-requests', EXPIRED_OOB_CODE: 'expired-action-code',
    INVALID_OOB_CODE: 'invalid-action-code', MISSING_OOB_CODE: 'internal-error',
    CREDENTIAL_TOO_OLD_LOGIN_AGAIN: 'requires-recent-login', INVALID_ID_TOKEN: 'invalid-user-token',
    TOKEN_EXPIRED: 'user-token-expired', USER_NOT_FOUND: 'user-token-expired',
    TOO_MANY_ATTEMPTS_TRY_LATER: 'too-many-requests',
    PASSWORD_DOES_NOT_MEET_REQUIREMENTS: 'password-does-not-meet-requirements',
    INVALID_CODE: 'invalid-verification-code', INVALID_SESSION_INFO: 'invalid-verification-id',
    INVALID_TEMPORARY_PROOF: 'invalid-credential', MISSING_SESSION_INFO: 'missing-verification-id',
    SESSION_EXPIRED: 'code-expired', MISSING_ANDROID_PACKAGE_NAME: 'missing-android-pkg-name',
    UNAUTHORIZED_DOMAIN: 'unauthorized-continue-uri', INVALID_OAUTH_CLIENT_ID: 'invalid-oauth-client-id',
    ADMIN_ONLY_OPERATION: 'admin-restricted-operation',
    INVALID_MFA_PENDING_CREDENTIAL: 'invalid-multi-factor-session',
    MFA_ENROLLMENT_NOT_FOUND: 'multi-factor-info-not-found', MISSING_MFA_ENROLLMENT_ID: 'missing-multi-factor-info',
    MISSING_MFA_PENDING_CREDENTIAL: 'missing-multi-factor-session',
    SECOND_FACTOR_EXISTS: 'second-factor-already-in-use',
    SECOND_FACTOR_LIMIT_EXCEEDED: 'maximum-second-factor-count-exceeded',
    BLOCKING_FUNCTION_ERROR_RESPONSE: 'internal-error', RECAPTCHA_NOT_ENABLED: 'recaptcha-not-enabled',
    MISSING_RECAPTCHA_TOKEN: 'missing-recaptcha-token', INVALID_RECAPTCHA_TOKEN: 'invalid-recaptcha-token',
    INVALID_RECAPTCHA_ACTION: 'invalid-recaptcha-action', MISSING_CLIENT_TYPE: 'missing-client-type',
    MISSING_RECAPTCHA_VERSION: 'missing-recaptcha-version', INVALID_RECAPTCHA_VERSION: 'invalid-recaptcha-version',
    INVALID_REQ_TYPE: 'invalid-req-type'
  };

  // ==============================================================================================================
  // Harness state (window.__sdk) — filled as the flows run
  // ==============================================================================================================

  var harness = {
    version: SDK_VERSION,
    ready: false,            // auth initialization (incl. redirect completion) finished
    configError: null,
    initError: null,
    config: null,
    pendingRedirectAtLoad: false,
    journal: [],             // harness entries from earlier page loads of this tab (redirect navigations)
    requests: [],            // every REST call: {n, endpoint, url, method, headers, body, status, response, error}
    idpRequests: [],         // the body of every signInWithIdp request, in order
    events: [],              // every message the SDK's 'authEvent' gapi handler received: {authEvent, status|error}
    popups: [],              // every window.open: {url, name, features, params}
    handlerUrls: [],         // every handler URL the SDK built (popup and redirect)
    iframe: null,            // {url (as the SDK built it), src (as the element got it), opened}
    ops: {},                 // op id -> {id, method, args, state, result, error, started, settled}
    lastResult: null,
    lastError: null,
    redirect: null           // the op record of the getRedirectResult() the app calls on load
  };
  window.__sdk = harness;

  function clone(value) {
    if (value === undefined) {
      return undefined;
    }
    try {
      return JSON.parse(JSON.stringify(value));
    } catch (e) {
      return String(value);
    }
  }

  // ==============================================================================================================
  // Errors (core/util/assert.ts; api/index.ts:350-371 _makeTaggedError)
  // ==============================================================================================================

  var appNameForErrors = '[DEFAULT]';

  function AuthError(code, message, customData) {
    var error = new Error(message);
    error.name = 'FirebaseError';
    error.code = 'auth/' + code;
    error.customData = Object.assign({appName: appNameForErrors}, customData || {});
    return error;
  }

  function createError(code, params, customMessage) {
    // Production builds use an empty message map, so the message is "Firebase: Error (auth/<code>)."; a custom
    // server message replaces "Error" (_errorWithCustomMessage, core/util/assert.ts:86-103).
    return AuthError(code, 'Firebase: ' + (customMessage || 'Error') + ' (auth/' + code + ').', params);
  }

  function assert(condition, code, params) {
    if (!condition) {
      throw createError(code, params);
    }
  }

  function serializeError(error) {
    if (!error) {
      return null;
    }
    return {
      name: error.name || 'Error',
      code: error.code || null,
      message: error.message || String(error),
      customData: clone(error.customData) || null
    };
  }

  // ==============================================================================================================
  // Small utilities
  // ==============================================================================================================

  // core/util/delay.ts:26-57: desktop browsers get the short delay; offline, min(5000, short).
  function delay(pair) {
    if (navigator.onLine === false) {
      return Math.min(5000, pair[0]);
    }
    return pair[0];
  }

  // core/util/event_id.ts:18-24
  function generateEventId(prefix, digits) {
    var random = '';
    var count = digits === undefined ? 10 : digits;
    for (var i = 0; i < count; i++) {
      random += Math.floor(Math.random() * 10);
    }
    return (prefix || '') + random;
  }

  // packages/util/src/query.ts:23-39 (leading '&' included, as there; callers slice(1)).
  function querystring(params) {
    var parts = [];
    Object.keys(params).forEach(function (key) {
      var value = params[key];
      if (Array.isArray(value)) {
        value.forEach(function (item) {
          parts.push(encodeURIComponent(key) + '=' + encodeURIComponent(item));
        });
      } else {
        parts.push(encodeURIComponent(key) + '=' + encodeURIComponent(value));
      }
    });
    return parts.length ? '&' + parts.join('&') : '';
  }

  function isEmpty(object) {
    for (var key in object) {
      if (Object.prototype.hasOwnProperty.call(object, key)) {
        return false;
      }
    }
    return true;
  }

  function base64UrlDecode(text) {
    var b64 = text.replace(/-/g, '+').replace(/_/g, '/');
    while (b64.length % 4) {
      b64 += '=';
    }
    var binary = atob(b64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) {
      bytes[i] = binary.charCodeAt(i);
    }
    return new TextDecoder().decode(bytes);
  }

  // core/user/id_token_result.ts:94-119
  function parseToken(token) {
    var parts = String(token || '').split('.');
    if (parts.length < 3 || parts[0] === undefined || parts[1] === undefined || parts[2] === undefined) {
      return null;
    }
    try {
      var decoded = base64UrlDecode(parts[1]);
      return decoded ? JSON.parse(decoded) : null;
    } catch (e) {
      return null;
    }
  }

  // core/user/id_token_result.ts _tokenExpiresIn: exp - iat of the token.
  function tokenExpiresIn(token) {
    var parsed = parseToken(token);
    assert(parsed, 'internal-error');
    assert(typeof parsed.exp !== 'undefined', 'internal-error');
    assert(typeof parsed.iat !== 'undefined', 'internal-error');
    return Number(parsed.exp) - Number(parsed.iat);
  }

  // core/util/browser.ts:49-89 (_getBrowserName), the branches a desktop browser can hit.
  function browserName(userAgent) {
    var ua = userAgent.toLowerCase();
    if (ua.indexOf('opera/') >= 0 || ua.indexOf('opr/') >= 0 || ua.indexOf('opios/') >= 0) {
      return 'Opera';
    } else if (ua.indexOf('msie') >= 0 || ua.indexOf('trident/') >= 0) {
      return 'IE';
    } else if (ua.indexOf('edge/') >= 0) {
      return 'Edge';
    } else if (/firefox\//i.test(ua)) {
      return 'Firefox';
    } else if (ua.indexOf('silk/') >= 0) {
      return 'Silk';
    } else if (ua.indexOf('safari/') >= 0 && ua.indexOf('chrome/') < 0 && ua.indexOf('crios/') < 0 &&
               ua.indexOf('android') < 0) {
      return 'Safari';
    } else if ((ua.indexOf('chrome/') >= 0 || /crios\//.test(ua)) && ua.indexOf('edge/') < 0) {
      return 'Chrome';
    } else if (/android/.test(ua)) {
      return 'Android';
    }
    var matches = userAgent.match(/([a-zA-Z\d\.]+)\/[a-zA-Z\d\.]*$/);
    if (matches && matches.length === 2) {
      return matches[1];
    }
    return 'Other';
  }

  // ==============================================================================================================
  // Configuration (query string) and connectAuthEmulator (core/auth/emulator.ts:40-110)
  // ==============================================================================================================

  var query = new URLSearchParams(location.search);
  var config = {
    emulator: query.get('emulator'),
    apiKey: query.get('apiKey'),
    appName: query.get('appName') || '[DEFAULT]',
    tenantId: query.get('tenantId') || null,
    appId: query.get('appId') || null,
    authDomain: query.get('authDomain') || null,
    languageCode: query.get('lang') || null,
    widgetPaths: query.get('widgetPaths') === 'hosted' ? 'hosted' : 'emulator'
  };
  appNameForErrors = config.appName;

  var emulatorUrl = null;
  (function connectAuthEmulator() {
    if (!config.emulator || !config.apiKey) {
      harness.configError = 'app.html needs ?emulator=<http(s)://host:port>&apiKey=<key>';
      return;
    }
    if (!/^https?:\/\//.test(config.emulator)) {                   // emulator.ts:51-55
      harness.configError = 'auth/invalid-emulator-scheme';
      return;
    }
    var parsed = new URL(config.emulator);
    // "Always replace path with '/'" (emulator.ts:63-64).
    emulatorUrl = parsed.protocol + '//' + parsed.host + '/';
    if (!config.authDomain) {
      // authDomain must be set even in emulator mode (core/util/handler.ts:72); its value is only used in
      // auth._key() there. Default: the emulator's host.
      config.authDomain = parsed.host;
    }
  })();
  harness.config = clone(config);
  harness.config.emulatorUrl = emulatorUrl;

  // _getClientVersion (core/util/version.ts:41-64): <browser>/JsCore/<SDK_VERSION>/FirebaseCore-web.
  var clientVersion = browserName(navigator.userAgent) + '/JsCore/' + SDK_VERSION + '/FirebaseCore-web';

  function persistenceKey(name) {                                  // persistence_user_manager.ts:36-42
    return 'firebase:' + name + ':' + config.apiKey + ':' + config.appName;
  }

  function widgetUrl(which) {
    if (config.widgetPaths === 'hosted') {
      return emulatorUrl + (which === 'handler' ? HOSTED_WIDGET_PATH : HOSTED_IFRAME_PATH);
    }
    return emulatorUrl + (which === 'handler' ? EMULATOR_WIDGET_PATH : EMULATED_IFRAME_PATH);  // emulator.ts:21-30
  }

  // Web storage persistences: JSON values (platform_browser/persistence/browser.ts:47-54).
  function storage(area) {
    return {
      get: function (key) {
        var raw = area.getItem(key);
        return raw === null ? null : JSON.parse(raw);
      },
      set: function (key, value) {
        area.setItem(key, JSON.stringify(value));
      },
      remove: function (key) {
        area.removeItem(key);
      }
    };
  }
  var localPersistence = storage(window.localStorage);    // browserLocalPersistence
  var sessionPersistence = storage(window.sessionStorage); // browserSessionPersistence = _redirectPersistence

  // ==============================================================================================================
  // REST (api/index.ts:139-278; api/authentication/token.ts:63-108)
  // ==============================================================================================================

  var requestCounter = 0;

  function additionalHeaders() {                                     // core/auth/auth_impl.ts:831-858
    var headers = {'X-Client-Version': clientVersion};
    if (config.appId) {
      headers['X-Firebase-gmpid'] = config.appId;
    }
    return headers;
  }

  function addTidIfNecessary(request) {                              // api/index.ts:126-137
    if (auth.tenantId && !request.tenantId) {
      return Object.assign({}, request, {tenantId: auth.tenantId});
    }
    return request;
  }

  function makeTaggedError(code, response) {                         // api/index.ts:350-371
    var params = {};
    if (response.email) {
      params.email = response.email;
    }
    if (response.phoneNumber) {
      params.phoneNumber = response.phoneNumber;
    }
    var error = createError(code, params);
    error.customData._tokenResponse = response;
    return error;
  }

  // _performFetchWithErrorHandling (api/index.ts:196-255)
  function performFetchWithErrorHandling(entry, fetchFn) {
    var timer = null;
    var timeout = new Promise(function (_, reject) {
      timer = setTimeout(function () {
        reject(createError('network-request-failed'));
      }, delay(DEFAULT_API_TIMEOUT));
    });
    return Promise.race([fetchFn(), timeout]).then(function (response) {
      clearTimeout(timer);
      entry.status = response.status;
      return response.json().then(function (json) {
        entry.response = json;
        if ('needConfirmation' in json) {
          throw makeTaggedError('account-exists-with-different-credential', json);
        }
        if (response.ok && !('errorMessage' in json)) {
          return json;
        }
        var errorMessage = response.ok ? json.errorMessage : json.error.message;
        var split = String(errorMessage).split(' : ');
        var serverCode = split[0];
        var serverMessage = split[1];
        if (serverCode === 'FEDERATED_USER_ID_ALREADY_LINKED') {
          throw makeTaggedError('credential-already-in-use', json);
        } else if (serverCode === 'EMAIL_EXISTS') {
          throw makeTaggedError('email-already-in-use', json);
        } else if (serverCode === 'USER_DISABLED') {
          throw makeTaggedError('user-disabled', json);
        }
        var authCode = SERVER_ERROR_MAP[serverCode] || serverCode.toLowerCase().replace(/[_\s]+/g, '-');
        if (serverMessage) {
          throw createError(authCode, {}, serverMessage);
        }
        throw createError(authCode);
      });
    }).catch(function (error) {
      clearTimeout(timer);
      if (error && error.name === 'FirebaseError') {
        entry.error = error.code;
        throw error;
      }
      // Anything else (fetch TypeError: CORS, connection refused; JSON parse error) is a network error.
      entry.error = 'auth/network-request-failed: ' + String(error);
      throw createError('network-request-failed', {message: String(error)});
    });
  }

  function logRequest(entry) {
    entry.n = ++requestCounter;
    harness.requests.push(entry);
    if (entry.endpoint === '/v1/accounts:signInWithIdp') {
      harness.idpRequests.push(clone(entry.body));
    }
    return entry;
  }

  // _performApiRequest (api/index.ts:139-194): POST bodies are JSON; ?key=<apiKey>.
  function performApiRequest(method, path, request) {
    var query = querystring({key: config.apiKey}).slice(1);
    var url = emulatorUrl + API_HOST + path + '?' + query;           // _getFinalTarget (api/index.ts:280-308)
    var headers = additionalHeaders();
    headers['Content-Type'] = 'application/json';
    if (auth.languageCode) {
      headers['X-Firebase-Locale'] = auth.languageCode;
    }
    var body = JSON.stringify(request);
    var entry = logRequest({endpoint: path, url: url, method: method, headers: clone(headers),
                            body: JSON.parse(body), status: null, response: null, error: null});
    return performFetchWithErrorHandling(entry, function () {
      return fetch(url, {method: method, headers: headers, body: body,
                         referrerPolicy: 'strict-origin-when-cross-origin'});
    });
  }

  // _performSignInRequest (api/index.ts:257-278)
  function performSignInRequest(method, path, request) {
    return performApiRequest(method, path, request).then(function (response) {
      if ('mfaPendingCredential' in response) {
        throw createError('multi-factor-auth-required', {_serverResponse: response});
      }
      return response;
    });
  }

  // requestStsToken (api/authentication/token.ts:63-108)
  function requestStsToken(refreshToken) {
    var body = querystring({grant_type: 'refresh_token', refresh_token: refreshToken}).slice(1);
    var url = emulatorUrl + TOKEN_API_HOST + '/v1/token?key=' + config.apiKey;
    var headers = additionalHeaders();
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    var entry = logRequest({endpoint: '/v1/token', url: url, method: 'POST', headers: clone(headers),
                            body: body, status: null, response: null, error: null});
    return performFetchWithErrorHandling(entry, function () {
      return fetch(url, {method: 'POST', headers: headers, body: body});
    }).then(function (response) {
      return {accessToken: response.access_token, expiresIn: response.expires_in,
              refreshToken: response.refresh_token};
    });
  }

  function signInWithIdp(request) {                                   // api/authentication/idp.ts:50-60
    return performSignInRequest('POST', '/v1/accounts:signInWithIdp', addTidIfNecessary(request));
  }

  function getAccountInfo(request) {                                  // api/account_management/account.ts:89-99
    return performApiRequest('POST', '/v1/accounts:lookup', request);
  }

  // ==============================================================================================================
  // Users (core/user/user_impl.ts, token_manager.ts, reload.ts, invalidation.ts)
  // ==============================================================================================================

  function StsTokenManager() {
    this.refreshToken = null;
    this.accessToken = null;
    this.expirationTime = null;
  }
  StsTokenManager.prototype.isExpired = function () {                // token_manager.ts:46-51
    return !this.expirationTime || Date.now() > this.expirationTime - TOKEN_REFRESH_BUFFER;
  };
  StsTokenManager.prototype.updateFromServerResponse = function (response) {   // token_manager.ts:53-74
    assert(response.idToken, 'internal-error');
    assert(typeof response.refreshToken !== 'undefined', 'internal-error');
    var expiresIn = ('expiresIn' in response && typeof response.expiresIn !== 'undefined')
      ? Number(response.expiresIn) : tokenExpiresIn(response.idToken);
    this.updateTokensAndExpiration(response.idToken, response.refreshToken, expiresIn);
  };
  StsTokenManager.prototype.updateTokensAndExpiration = function (accessToken, refreshToken, expiresInSec) {
    this.refreshToken = refreshToken || null;
    this.accessToken = accessToken || null;
    this.expirationTime = Date.now() + expiresInSec * 1000;
  };
  StsTokenManager.prototype.getToken = function (forceRefresh) {      // token_manager.ts:82-98
    var self = this;
    if (!forceRefresh && this.accessToken && !this.isExpired()) {
      return Promise.resolve(this.accessToken);
    }
    assert(this.refreshToken, 'user-token-expired');
    return requestStsToken(this.refreshToken).then(function (r) {
      self.updateTokensAndExpiration(r.accessToken, r.refreshToken, Number(r.expiresIn));
      return self.accessToken;
    });
  };
  StsTokenManager.prototype.toJSON = function () {
    return {refreshToken: this.refreshToken, accessToken: this.accessToken, expirationTime: this.expirationTime};
  };
  StsTokenManager.fromJSON = function (object) {
    var manager = new StsTokenManager();
    if (object.refreshToken) {
      manager.refreshToken = object.refreshToken;
    }
    if (object.accessToken) {
      manager.accessToken = object.accessToken;
    }
    if (object.expirationTime) {
      manager.expirationTime = object.expirationTime;
    }
    return manager;
  };

  function User(params) {                                             // user_impl.ts:83-100
    this.providerId = 'firebase';
    this.uid = params.uid;
    this.stsTokenManager = params.stsTokenManager;
    this.accessToken = params.stsTokenManager.accessToken;
    this.displayName = params.displayName || null;
    this.email = params.email || null;
    this.emailVerified = params.emailVerified || false;
    this.phoneNumber = params.phoneNumber || null;
    this.photoURL = params.photoURL || null;
    this.isAnonymous = params.isAnonymous || false;
    this.tenantId = params.tenantId || null;
    this.providerData = params.providerData ? params.providerData.slice() : [];
    this.createdAt = params.createdAt || undefined;
    this.lastLoginAt = params.lastLoginAt || undefined;
    this._redirectEventId = undefined;
  }

  User.prototype.getIdToken = function (forceRefresh) {               // user_impl.ts:102-116
    var self = this;
    return logoutIfInvalidated(this, this.stsTokenManager.getToken(forceRefresh)).then(function (accessToken) {
      assert(accessToken, 'internal-error');
      if (self.accessToken !== accessToken) {
        self.accessToken = accessToken;
        return auth._persistUserIfCurrent(self).then(function () { return accessToken; });
      }
      return accessToken;
    });
  };

  User.prototype._updateTokensIfNecessary = function (response, reload) {   // user_impl.ts:183-204
    var self = this;
    if (response.idToken && response.idToken !== this.stsTokenManager.accessToken) {
      this.stsTokenManager.updateFromServerResponse(response);
    }
    return (reload ? reloadWithoutSaving(this) : Promise.resolve()).then(function () {
      return auth._persistUserIfCurrent(self);
    });
  };

  User.prototype.toJSON = function () {                              // user_impl.ts:222-245
    return {
      uid: this.uid,
      email: this.email || undefined,
      emailVerified: this.emailVerified,
      displayName: this.displayName || undefined,
      isAnonymous: this.isAnonymous,
      photoURL: this.photoURL || undefined,
      phoneNumber: this.phoneNumber || undefined,
      tenantId: this.tenantId || undefined,
      providerData: this.providerData.map(function (info) { return Object.assign({}, info); }),
      stsTokenManager: this.stsTokenManager.toJSON(),
      _redirectEventId: this._redirectEventId,
      createdAt: this.createdAt,
      lastLoginAt: this.lastLoginAt,
      apiKey: config.apiKey,
      appName: config.appName
    };
  };

  User.fromJSON = function (object) {                                // user_impl.ts:251-318
    assert(object && object.uid && object.stsTokenManager, 'internal-error');
    var user = new User({
      uid: object.uid,
      email: object.email,
      emailVerified: object.emailVerified,
      displayName: object.displayName,
      isAnonymous: object.isAnonymous,
      photoURL: object.photoURL,
      phoneNumber: object.phoneNumber,
      tenantId: object.tenantId,
      stsTokenManager: StsTokenManager.fromJSON(object.stsTokenManager),
      createdAt: object.createdAt,
      lastLoginAt: object.lastLoginAt
    });
    if (Array.isArray(object.providerData)) {
      user.providerData = object.providerData.map(function (info) { return Object.assign({}, info); });
    }
    if (object._redirectEventId) {
      user._redirectEventId = object._redirectEventId;
    }
    return user;
  };

  User.fromIdTokenResponse = function (response, isAnonymous) {      // user_impl.ts:325-344
    var sts = new StsTokenManager();
    sts.updateFromServerResponse(response);
    var user = new User({uid: response.localId, stsTokenManager: sts, isAnonymous: !!isAnonymous});
    return reloadWithoutSaving(user).then(function () { return user; });
  };

  function extractProviderData(providers) {                          // reload.ts:105-116
    return providers.map(function (provider) {
      return {
        providerId: provider.providerId,
        uid: provider.rawId || '',
        displayName: provider.displayName || null,
        email: provider.email || null,
        phoneNumber: provider.phoneNumber || null,
        photoURL: provider.photoUrl || null
      };
    });
  }

  function reloadWithoutSaving(user) {                               // reload.ts:31-75
    return user.getIdToken().then(function (idToken) {
      return logoutIfInvalidated(user, getAccountInfo({idToken: idToken}));
    }).then(function (response) {
      assert(response && response.users && response.users.length, 'internal-error');
      var core = response.users[0];
      var newProviderData = core.providerUserInfo && core.providerUserInfo.length
        ? extractProviderData(core.providerUserInfo) : [];
      var kept = user.providerData.filter(function (old) {
        return !newProviderData.some(function (n) { return n.providerId === old.providerId; });
      });
      var providerData = kept.concat(newProviderData);
      var oldIsAnonymous = user.isAnonymous;
      var newIsAnonymous = !(user.email && core.passwordHash) && !providerData.length;
      user.uid = core.localId;
      user.displayName = core.displayName || null;
      user.photoURL = core.photoUrl || null;
      user.email = core.email || null;
      user.emailVerified = core.emailVerified || false;
      user.phoneNumber = core.phoneNumber || null;
      user.tenantId = core.tenantId || null;
      user.providerData = providerData;
      user.createdAt = core.createdAt;
      user.lastLoginAt = core.lastLoginAt;
      user.isAnonymous = !oldIsAnonymous ? false : newIsAnonymous;
    });
  }

  function logoutIfInvalidated(user, promise, bypassAuthState) {   // invalidation.ts:23-49
    if (bypassAuthState) {
      return promise;
    }
    return promise.catch(function (error) {
      if (error && (error.code === 'auth/user-disabled' || error.code === 'auth/user-token-expired') &&
          auth.currentUser === user) {
        return auth.signOut().then(function () { throw error; });
      }
      throw error;
    });
  }

  // UserCredentialImpl (core/user/user_credential_impl.ts)
  function providerIdForResponse(response) {
    if (response.providerId) {
      return response.providerId;
    }
    if ('phoneNumber' in response) {
      return 'phone';
    }
    return null;
  }
  function credentialFromIdTokenResponse(operationType, response, isAnonymous) {
    return User.fromIdTokenResponse(response, isAnonymous).then(function (user) {
      return {user: user, providerId: providerIdForResponse(response), _tokenResponse: response,
              operationType: operationType};
    });
  }
  function credentialForOperation(user, operationType, response) {
    return user._updateTokensIfNecessary(response, true).then(function () {
      return {user: user, providerId: providerIdForResponse(response), _tokenResponse: response,
              operationType: operationType};
    });
  }

  // ==============================================================================================================
  // Auth (core/auth/auth_impl.ts)
  // ==============================================================================================================

  var auth = {
    name: config.appName,
    config: {apiKey: config.apiKey, authDomain: config.authDomain, emulator: {url: emulatorUrl}},
    tenantId: config.tenantId,
    languageCode: config.languageCode,
    currentUser: null,
    redirectUser: null,
    redirectPersistenceLoaded: false,
    _isInitialized: false,
    _initializationPromise: null,
    operations: Promise.resolve(),

    _key: function () {                                              // auth_impl.ts:690-692
      return this.config.authDomain + ':' + this.config.apiKey + ':' + this.name;
    },

    queue: function (action) {
      this.operations = this.operations.then(action, action);
      return this.operations;
    },

    directlySetCurrentUser: function (user) {
      this.currentUser = user;
      if (user) {
        localPersistence.set(persistenceKey('authUser'), user.toJSON());
      } else {
        localPersistence.remove(persistenceKey('authUser'));
      }
      render();
      return Promise.resolve();
    },

    _updateCurrentUser: function (user) {                            // auth_impl.ts:426-449
      var self = this;
      if (user) {
        assert(this.tenantId === user.tenantId, 'tenant-id-mismatch');
      }
      return this.queue(function () { return self.directlySetCurrentUser(user); });
    },

    _persistUserIfCurrent: function (user) {                         // auth_impl.ts:677-681
      var self = this;
      if (user === this.currentUser) {
        return this.queue(function () { return self.directlySetCurrentUser(user); });
      }
      return Promise.resolve();
    },

    signOut: function () {                                            // auth_impl.ts:451-467
      var self = this;
      return this._setRedirectUser(null).then(function () { return self._updateCurrentUser(null); });
    },

    getOrInitRedirectPersistenceManager: function () {              // auth_impl.ts:639-657
      if (!this.redirectPersistenceLoaded) {
        this.redirectPersistenceLoaded = true;
        var blob = null;
        try {
          blob = sessionPersistence.get(persistenceKey('redirectUser'));
        } catch (e) {
          blob = null;
        }
        this.redirectUser = blob && typeof blob === 'object' ? User.fromJSON(blob) : null;
      }
      return Promise.resolve();
    },

    _setRedirectUser: function (user) {                               // auth_impl.ts:627-637
      return this.getOrInitRedirectPersistenceManager().then(function () {
        if (user === null) {
          sessionPersistence.remove(persistenceKey('redirectUser'));
        } else {
          sessionPersistence.set(persistenceKey('redirectUser'), user.toJSON());
        }
      });
    },

    _redirectUserForId: function (id) {                              // auth_impl.ts:659-675
      var self = this;
      var wait = this._isInitialized ? this.queue(function () {}) : Promise.resolve();
      return wait.then(function () {
        if (self.currentUser && self.currentUser._redirectEventId === id) {
          return self.currentUser;
        }
        if (self.redirectUser && self.redirectUser._redirectEventId === id) {
          return self.redirectUser;
        }
        return null;
      });
    },

    reloadAndSetCurrentUserOrClear: function (user) {                // auth_impl.ts:378-395
      var self = this;
      return reloadWithoutSaving(user).then(function () {
        return self.directlySetCurrentUser(user);
      }, function (error) {
        if (!error || error.code !== 'auth/network-request-failed') {
          return self.directlySetCurrentUser(null);
        }
        return self.directlySetCurrentUser(user);
      });
    },

    tryRedirectSignIn: function () {                                  // auth_impl.ts:341-376
      var self = this;
      return getRedirectResultInternal(true).catch(function () {
        // Errors are kept for getRedirectResult(); the redirect user is dropped.
        return self._setRedirectUser(null).then(function () { return null; });
      });
    },

    initializeCurrentUser: function () {                              // auth_impl.ts:252-339
      var self = this;
      var previouslyStoredUser = null;
      try {
        var blob = localPersistence.get(persistenceKey('authUser'));
        previouslyStoredUser = blob && typeof blob === 'object' ? User.fromJSON(blob) : null;
      } catch (e) {
        previouslyStoredUser = null;
      }
      var futureCurrentUser = previouslyStoredUser;
      var step = Promise.resolve();
      if (this.config.authDomain) {
        step = this.getOrInitRedirectPersistenceManager().then(function () {
          var redirectUserEventId = self.redirectUser && self.redirectUser._redirectEventId;
          var storedUserEventId = futureCurrentUser && futureCurrentUser._redirectEventId;
          return self.tryRedirectSignIn().then(function (result) {
            if ((!redirectUserEventId || redirectUserEventId === storedUserEventId) && result && result.user) {
              futureCurrentUser = result.user;
            }
          });
        });
      }
      return step.then(function () {
        if (!futureCurrentUser) {
          return self.directlySetCurrentUser(null);
        }
        if (!futureCurrentUser._redirectEventId) {
          return self.reloadAndSetCurrentUserOrClear(futureCurrentUser);
        }
        return self.getOrInitRedirectPersistenceManager().then(function () {
          // "If the redirect user's event ID matches the current user's event ID, DO NOT reload the current user"
          // (auth_impl.ts:328-336).
          if (self.redirectUser && self.redirectUser._redirectEventId === futureCurrentUser._redirectEventId) {
            return self.directlySetCurrentUser(futureCurrentUser);
          }
          return self.reloadAndSetCurrentUserOrClear(futureCurrentUser);
        });
      });
    },

    initialize: function () {                                         // auth_impl.ts:152-200
      var self = this;
      this._initializationPromise = this.queue(function () {
        return self.initializeCurrentUser().then(function () {
          self._isInitialized = true;
        });
      });
      return this._initializationPromise;
    }
  };

  // ==============================================================================================================
  // Providers (core/providers/federated.ts, oauth.ts, google.ts, saml.ts)
  // ==============================================================================================================

  // spec: {providerId, scopes?: [..], customParameters?: {..}, generic?: bool}. google.com gets GoogleAuthProvider
  // (adds 'profile', google.ts:75-78) unless generic (new OAuthProvider('google.com')); saml.* is a SAMLAuthProvider
  // (no scopes: not a BaseOAuthProvider); 'password' and 'phone' are not FederatedAuthProviders.
  function makeProvider(spec) {
    spec = spec || {};
    var providerId = spec.providerId;
    if (!providerId || providerId === 'password' || providerId === 'phone') {
      throw createError('argument-error');                          // _assertInstanceOf(FederatedAuthProvider)
    }
    var isSaml = providerId.indexOf('saml.') === 0;
    var provider = {
      providerId: providerId,
      isOAuth: !isSaml,
      scopes: [],
      customParameters: spec.customParameters || {},
      defaultLanguageCode: null
    };
    function addScope(scope) {                                        // oauth.ts:75-81
      if (provider.scopes.indexOf(scope) < 0) {
        provider.scopes.push(scope);
      }
    }
    if (providerId === 'google.com' && !spec.generic) {
      addScope('profile');
    }
    if (spec.scopes && spec.scopes.length) {
      assert(!isSaml, 'argument-error');
      spec.scopes.forEach(addScope);
    }
    return provider;
  }

  // _getRedirectUrl (core/util/handler.ts:64-128)
  function getRedirectUrl(provider, authType, redirectUrl, eventId) {
    assert(auth.config.authDomain, 'auth-domain-config-required');
    assert(auth.config.apiKey, 'invalid-api-key');
    var params = {
      apiKey: auth.config.apiKey,
      appName: auth.name,
      authType: authType,
      redirectUrl: redirectUrl,
      v: SDK_VERSION,
      eventId: eventId
    };
    provider.defaultLanguageCode = auth.languageCode;                 // never serialized (federated.ts:52-54)
    params.providerId = provider.providerId || '';
    if (!isEmpty(provider.customParameters)) {
      params.customParameters = JSON.stringify(provider.customParameters);
    }
    if (provider.isOAuth) {
      var scopes = provider.scopes.filter(function (scope) { return scope !== ''; });
      if (scopes.length > 0) {
        params.scopes = scopes.join(',');
      }
    }
    if (auth.tenantId) {
      params.tid = auth.tenantId;
    }
    Object.keys(params).forEach(function (key) {
      if (params[key] === undefined) {
        delete params[key];
      }
    });
    // No App Check in this app, so no #fac= fragment (handler.ts:118-122).
    var url = widgetUrl('handler') + '?' + querystring(params).slice(1);
    harness.handlerUrls.push(url);
    return url;
  }

  // ==============================================================================================================
  // gapi loading and the iframe (platform_browser/iframe/gapi.ts, iframe.ts; platform_browser/index.ts:118-144)
  // ==============================================================================================================

  function loadJS(url) {
    return new Promise(function (resolve, reject) {
      var el = document.createElement('script');
      el.setAttribute('src', url);
      el.onload = resolve;
      el.onerror = function (e) {
        var error = createError('internal-error');
        error.customData.event = String(e && e.type);
        reject(error);
      };
      el.type = 'text/javascript';
      el.charset = 'UTF-8';
      (document.getElementsByTagName('head')[0] || document).appendChild(el);
    });
  }

  function resetUnloadedGapiModules() {                               // gapi.ts:31-55
    var beacon = window.___jsl;
    if (beacon && beacon.H) {
      Object.keys(beacon.H).forEach(function (hint) {
        beacon.H[hint].r = beacon.H[hint].r || [];
        beacon.H[hint].L = beacon.H[hint].L || [];
        beacon.H[hint].r = beacon.H[hint].L.slice();
        if (beacon.CP) {
          for (var i = 0; i < beacon.CP.length; i++) {
            beacon.CP[i] = null;
          }
        }
      });
    }
  }

  var cachedGApiLoader = null;
  function loadGapi() {                                                // gapi.ts:57-121
    cachedGApiLoader = cachedGApiLoader || new Promise(function (resolve, reject) {
      function loadGapiIframe() {
        resetUnloadedGapiModules();
        window.gapi.load('gapi.iframes', {
          callback: function () { resolve(window.gapi.iframes.getContext()); },
          ontimeout: function () {
            resetUnloadedGapiModules();
            reject(createError('network-request-failed'));
          },
          timeout: delay(NETWORK_TIMEOUT)
        });
      }
      if (window.gapi && window.gapi.iframes && window.gapi.iframes.Iframe) {
        resolve(window.gapi.iframes.getContext());
      } else if (window.gapi && window.gapi.load) {
        loadGapiIframe();
      } else {
        var cbName = '__iframefcb' + Math.floor(Math.random() * 1000000);   // load_js.ts _generateCallbackName
        window[cbName] = function () {
          if (window.gapi && window.gapi.load) {
            loadGapiIframe();
          } else {
            reject(createError('network-request-failed'));
          }
        };
        harness.gapiScriptUrl = GAPI_SCRIPT + '?onload=' + cbName;
        loadJS(harness.gapiScriptUrl).catch(reject);
      }
    }).catch(function (error) {
      cachedGApiLoader = null;
      throw error;
    });
    return cachedGApiLoader;
  }

  function getIframeUrl() {                                            // iframe.ts:53-74
    assert(auth.config.authDomain, 'auth-domain-config-required');
    var params = {apiKey: auth.config.apiKey, appName: auth.name, v: SDK_VERSION};
    // EID_FROM_APIHOST: connectAuthEmulator leaves apiHost at identitytoolkit.googleapis.com, so eid=p.
    params.eid = 'p';
    return widgetUrl('iframe') + '?' + querystring(params).slice(1);
  }

  function openIframe() {                                              // iframe.ts:76-118
    return loadGapi().then(function (context) {
      var gapi = window.gapi;
      assert(gapi, 'internal-error');
      var url = getIframeUrl();
      harness.iframe = {url: url, src: null, opened: Date.now()};
      return context.open({
        where: document.body,
        url: url,
        messageHandlersFilter: gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER,
        attributes: IFRAME_ATTRIBUTES,
        dontclear: true
      }, function (iframe) {
        if (iframe && iframe.getIframeEl && iframe.getIframeEl()) {
          harness.iframe.src = iframe.getIframeEl().src;
        }
        return new Promise(function (resolve, reject) {
          Promise.resolve(iframe.restyle({setHideOnLeave: false})).then(function () {
            var networkError = createError('network-request-failed');
            var networkErrorTimer = setTimeout(function () { reject(networkError); }, delay(PING_TIMEOUT));
            function clearTimerAndResolve() {
              clearTimeout(networkErrorTimer);
              resolve(iframe);
            }
            iframe.ping(clearTimerAndResolve).then(clearTimerAndResolve, function () { reject(networkError); });
          });
        });
      });
    });
  }

  // ==============================================================================================================
  // Event manager (core/auth/auth_event_manager.ts)
  // ==============================================================================================================

  function eventUid(e) {
    return [e.type, e.eventId, e.sessionId, e.tenantId].filter(function (v) { return v; }).join('-');
  }
  function isNullRedirectEvent(e) {
    return e.type === AuthEventType.UNKNOWN && !!e.error && e.error.code === 'auth/no-auth-event';
  }
  function isRedirectEvent(e) {
    switch (e.type) {
      case AuthEventType.SIGN_IN_VIA_REDIRECT:
      case AuthEventType.LINK_VIA_REDIRECT:
      case AuthEventType.REAUTH_VIA_REDIRECT:
        return true;
      case AuthEventType.UNKNOWN:
        return isNullRedirectEvent(e);
      default:
        return false;
    }
  }

  function AuthEventManager() {
    this.cachedEventUids = {};
    this.consumers = [];
    this.queuedRedirectEvent = null;
    this.hasHandledPotentialRedirect = false;
    this.lastProcessedEventTime = Date.now();
  }
  AuthEventManager.prototype.registerConsumer = function (consumer) {
    if (this.consumers.indexOf(consumer) < 0) {
      this.consumers.push(consumer);
    }
    if (this.queuedRedirectEvent && this.isEventForConsumer(this.queuedRedirectEvent, consumer)) {
      this.sendToConsumer(this.queuedRedirectEvent, consumer);
      this.saveEventToCache(this.queuedRedirectEvent);
      this.queuedRedirectEvent = null;
    }
  };
  AuthEventManager.prototype.unregisterConsumer = function (consumer) {
    this.consumers = this.consumers.filter(function (c) { return c !== consumer; });
  };
  AuthEventManager.prototype.onEvent = function (event) {
    var self = this;
    if (this.hasEventBeenHandled(event)) {
      return false;
    }
    var handled = false;
    this.consumers.slice().forEach(function (consumer) {
      if (self.isEventForConsumer(event, consumer)) {
        handled = true;
        self.sendToConsumer(event, consumer);
        self.saveEventToCache(event);
      }
    });
    if (this.hasHandledPotentialRedirect || !isRedirectEvent(event)) {
      return handled;
    }
    this.hasHandledPotentialRedirect = true;
    if (!handled) {
      this.queuedRedirectEvent = event;
      handled = true;
    }
    return handled;
  };
  AuthEventManager.prototype.sendToConsumer = function (event, consumer) {
    if (event.error && !isNullRedirectEvent(event)) {
      var code = (event.error.code && event.error.code.split('auth/')[1]) || 'internal-error';
      consumer.onError(createError(code));
    } else {
      consumer.onAuthEvent(event);
    }
  };
  AuthEventManager.prototype.isEventForConsumer = function (event, consumer) {
    var eventIdMatches = consumer.eventId === null || (!!event.eventId && event.eventId === consumer.eventId);
    return consumer.filter.indexOf(event.type) >= 0 && eventIdMatches;
  };
  AuthEventManager.prototype.hasEventBeenHandled = function (event) {
    if (Date.now() - this.lastProcessedEventTime >= EVENT_DUPLICATION_CACHE_DURATION_MS) {
      this.cachedEventUids = {};
    }
    return Object.prototype.hasOwnProperty.call(this.cachedEventUids, eventUid(event));
  };
  AuthEventManager.prototype.saveEventToCache = function (event) {
    this.cachedEventUids[eventUid(event)] = true;
    this.lastProcessedEventTime = Date.now();
  };

  // ==============================================================================================================
  // BrowserPopupRedirectResolver (platform_browser/popup_redirect.ts)
  // ==============================================================================================================

  function isFirefox(ua) {
    return /firefox\//i.test(ua);
  }

  // _open (platform_browser/util/popup.ts:56-112); desktop branches.
  function openPopupWindow(url, name) {
    var width = 500;
    var height = 600;
    var top = Math.max((window.screen.availHeight - height) / 2, 0).toString();
    var left = Math.max((window.screen.availWidth - width) / 2, 0).toString();
    var options = {location: 'yes', resizable: 'yes', statusbar: 'yes', toolbar: 'no',
                   width: width.toString(), height: height.toString(), top: top, left: left};
    if (isFirefox(navigator.userAgent)) {
      options.scrollbars = 'yes';
    }
    var features = Object.keys(options).reduce(function (acc, key) {
      return acc + key + '=' + options[key] + ',';
    }, '');
    var params = {};
    new URL(url).searchParams.forEach(function (value, key) { params[key] = value; });
    harness.popups.push({url: url, name: name, features: features, params: params, at: Date.now()});
    var newWin = window.open(url, name || '', features);
    assert(newWin, 'popup-blocked');
    try {
      newWin.focus();
    } catch (e) { /* as the SDK */ }
    return {window: newWin, associatedEvent: null, close: function () {
      try {
        newWin.close();
      } catch (e) { /* as the SDK */ }
    }};
  }

  var resolver = {
    eventManagers: {},
    iframes: {},
    originValidationPromises: {},

    _openPopup: function (provider, authType, eventId) {              // popup_redirect.ts:67-86
      var url = getRedirectUrl(provider, authType, location.href, eventId);   // _getCurrentUrl()
      return openPopupWindow(url, generateEventId());
    },

    _openRedirect: function (provider, authType, eventId) {           // popup_redirect.ts:88-104
      return this._originValidation().then(function () {
        var url = getRedirectUrl(provider, authType, location.href, eventId);
        journal({kind: 'redirect', authType: authType, url: url});
        window.location.href = url;                                     // _setWindowLocation (auth_window.ts:48-50)
        return new Promise(function () {});
      });
    },

    _initialize: function () {                                         // popup_redirect.ts:106-128
      var self = this;
      var key = auth._key();
      if (this.eventManagers[key]) {
        var entry = this.eventManagers[key];
        return entry.manager ? Promise.resolve(entry.manager) : entry.promise;
      }
      var promise = this.initAndGetManager();
      this.eventManagers[key] = {promise: promise};
      promise.catch(function () { delete self.eventManagers[key]; });
      return promise;
    },

    initAndGetManager: function () {                                   // popup_redirect.ts:130-148
      var self = this;
      return openIframe().then(function (iframe) {
        var manager = new AuthEventManager();
        iframe.register('authEvent', function (iframeEvent) {
          var record = {at: Date.now(), message: clone(iframeEvent),
                        authEvent: clone(iframeEvent && iframeEvent.authEvent)};
          harness.events.push(record);
          try {
            assert(iframeEvent && iframeEvent.authEvent, 'invalid-auth-event');
          } catch (error) {
            record.error = error.code;
            render();
            throw error;
          }
          var handled = manager.onEvent(iframeEvent.authEvent);
          record.status = handled ? 'ACK' : 'ERROR';
          render();
          return {status: handled ? 'ACK' : 'ERROR'};
        }, window.gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER);
        self.eventManagers[auth._key()] = {manager: manager};
        self.iframes[auth._key()] = iframe;
        return manager;
      });
    },

    _isIframeWebStorageSupported: function (cb) {                      // popup_redirect.ts:150-168
      var iframe = this.iframes[auth._key()];
      iframe.send('webStorageSupport', {type: 'webStorageSupport'}, function (result) {
        harness.webStorageSupport = clone(result);
        var isSupported = result && result[0] && result[0].webStorageSupport;
        if (isSupported !== undefined) {
          cb(!!isSupported);
        }
        throw createError('internal-error');                          // _fail(auth, INTERNAL_ERROR), on purpose
      }, window.gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER);
    },

    _originValidation: function () {                                   // popup_redirect.ts:170-177
      var key = auth._key();
      if (!this.originValidationPromises[key]) {
        // _validateOrigin returns at once in emulator mode (core/util/validate_origin.ts:27-31).
        this.originValidationPromises[key] = Promise.resolve();
      }
      return this.originValidationPromises[key];
    },

    // Desktop Chrome: not proactive (popup_redirect.ts:179-182), so no iframe on a plain page load.
    _shouldInitProactively: false
  };

  // ==============================================================================================================
  // Operations (core/strategies/abstract_popup_redirect_operation.ts, platform_browser/strategies/popup.ts,
  // core/strategies/redirect.ts, core/strategies/idp.ts, core/user/link_unlink.ts, core/user/reauthenticate.ts)
  // ==============================================================================================================

  function buildIdpRequest(params, idToken) {                          // idp.ts:69-85
    var request = {
      requestUri: params.requestUri,
      sessionId: params.sessionId,
      postBody: params.postBody,
      tenantId: params.tenantId,
      pendingToken: params.pendingToken,
      returnSecureToken: true,
      returnIdpCredential: true
    };
    if (idToken) {
      request.idToken = idToken;
    }
    return request;
  }

  function idpSignIn(params) {                                         // idp.ts:88-96 -> credential.ts:33-59
    return signInWithIdp(buildIdpRequest(params)).then(function (response) {
      return credentialFromIdTokenResponse(OperationType.SIGN_IN, response, false);
    }).then(function (userCredential) {
      if (!params.bypassAuthState) {
        return auth._updateCurrentUser(userCredential.user).then(function () { return userCredential; });
      }
      return userCredential;
    });
  }

  function idpLink(params) {                                           // idp.ts:110-116 -> link_unlink.ts:61-72
    var user = params.user;
    assert(user, 'internal-error');
    return user.getIdToken().then(function (idToken) {
      return logoutIfInvalidated(user, signInWithIdp(buildIdpRequest(params, idToken)), params.bypassAuthState);
    }).then(function (response) {
      return credentialForOperation(user, OperationType.LINK, response);
    });
  }

  function idpReauth(params) {                                         // idp.ts:98-108 -> reauthenticate.ts:31-70
    var user = params.user;
    assert(user, 'internal-error');
    return logoutIfInvalidated(user, signInWithIdp(buildIdpRequest(params)), params.bypassAuthState)
      .then(function (response) {
        assert(response.idToken, 'internal-error');
        var parsed = parseToken(response.idToken);
        assert(parsed, 'internal-error');
        assert(user.uid === parsed.sub, 'user-mismatch');
        return credentialForOperation(user, OperationType.REAUTHENTICATE, response);
      })
      .catch(function (error) {
        if (error && error.code === 'auth/user-not-found') {
          throw createError('user-mismatch');
        }
        throw error;
      });
  }

  function Operation(filter, user, bypassAuthState) {                 // abstract_popup_redirect_operation.ts:48-63
    this.filter = Array.isArray(filter) ? filter : [filter];
    this.user = user;
    this.bypassAuthState = !!bypassAuthState;
    this.pendingPromise = null;
    this.eventManager = null;
  }
  Operation.prototype.execute = function () {                          // :67-81
    var self = this;
    return new Promise(function (resolve, reject) {
      self.pendingPromise = {resolve: resolve, reject: reject};
      resolver._initialize().then(function (manager) {
        self.eventManager = manager;
        return self.onExecution();
      }).then(function () {
        self.eventManager.registerConsumer(self);
      }).catch(function (error) {
        self.reject(error);
      });
    });
  };
  Operation.prototype.onAuthEvent = function (event) {                 // :83-105
    var self = this;
    if (event.error) {
      this.reject(event.error);
      return Promise.resolve();
    }
    var params = {
      requestUri: event.urlResponse,
      sessionId: event.sessionId,
      tenantId: event.tenantId || undefined,
      postBody: event.postBody || undefined,
      user: this.user,
      bypassAuthState: this.bypassAuthState
    };
    var task;
    try {
      task = this.getIdpTask(event.type);
    } catch (error) {
      this.reject(error);
      return Promise.resolve();
    }
    return task(params).then(function (cred) { self.resolve(cred); }, function (error) { self.reject(error); });
  };
  Operation.prototype.onError = function (error) {
    this.reject(error);
  };
  Operation.prototype.getIdpTask = function (type) {                  // :111-125
    switch (type) {
      case AuthEventType.SIGN_IN_VIA_POPUP:
      case AuthEventType.SIGN_IN_VIA_REDIRECT:
        return idpSignIn;
      case AuthEventType.LINK_VIA_POPUP:
      case AuthEventType.LINK_VIA_REDIRECT:
        return idpLink;
      case AuthEventType.REAUTH_VIA_POPUP:
      case AuthEventType.REAUTH_VIA_REDIRECT:
        return idpReauth;
      default:
        throw createError('internal-error');
    }
  };
  Operation.prototype.resolve = function (cred) {
    if (!this.pendingPromise) {
      return;                                                         // debugAssert in the SDK
    }
    this.pendingPromise.resolve(cred);
    this.unregisterAndCleanUp();
  };
  Operation.prototype.reject = function (error) {
    if (!this.pendingPromise) {
      return;
    }
    this.pendingPromise.reject(error);
    this.unregisterAndCleanUp();
  };
  Operation.prototype.unregisterAndCleanUp = function () {
    if (this.eventManager) {
      this.eventManager.unregisterConsumer(this);
    }
    this.pendingPromise = null;
    this.cleanUp();
  };
  Operation.prototype.cleanUp = function () {};

  // PopupOperation (platform_browser/strategies/popup.ts:213-322)
  var currentPopupAction = null;
  function PopupOperation(filter, provider, user) {
    Operation.call(this, filter, user, false);
    this.provider = provider;
    this.authWindow = null;
    this.pollId = null;
    if (currentPopupAction) {
      currentPopupAction.cancel();                                   // :228-232
    }
    currentPopupAction = this;
  }
  PopupOperation.prototype = Object.create(Operation.prototype);
  Object.defineProperty(PopupOperation.prototype, 'eventId', {        // :278-280
    get: function () { return (this.authWindow && this.authWindow.associatedEvent) || null; }
  });
  PopupOperation.prototype.executeNotNull = function () {
    return this.execute().then(function (result) {
      assert(result, 'internal-error');
      return result;
    });
  };
  PopupOperation.prototype.onExecution = function () {               // :241-276
    var self = this;
    var eventId = generateEventId();
    return Promise.resolve().then(function () {
      return resolver._openPopup(self.provider, self.filter[0], eventId);
    }).then(function (authWindow) {
      self.authWindow = authWindow;
      self.authWindow.associatedEvent = eventId;
      resolver._originValidation().catch(function (error) { self.reject(error); });
      resolver._isIframeWebStorageSupported(function (isSupported) {
        if (!isSupported) {
          self.reject(createError('web-storage-unsupported'));
        }
      });
      self.pollUserCancellation();
    });
  };
  PopupOperation.prototype.cancel = function () {                     // :282-284
    this.reject(createError('cancelled-popup-request'));
  };
  PopupOperation.prototype.cleanUp = function () {                    // :286-298
    if (this.authWindow) {
      this.authWindow.close();
    }
    if (this.pollId) {
      clearTimeout(this.pollId);
    }
    this.authWindow = null;
    this.pollId = null;
    currentPopupAction = null;
  };
  PopupOperation.prototype.pollUserCancellation = function () {       // :300-321
    var self = this;
    function poll() {
      if (self.authWindow && self.authWindow.window && self.authWindow.window.closed) {
        self.pollId = setTimeout(function () {
          self.pollId = null;
          self.reject(createError('popup-closed-by-user'));
        }, AUTH_EVENT_TIMEOUT);
        return;
      }
      self.pollId = setTimeout(poll, delay(POLL_WINDOW_CLOSE_TIMEOUT));
    }
    poll();
  };

  // RedirectAction (core/strategies/redirect.ts:39-114)
  var redirectOutcomeMap = {};
  function RedirectAction(bypassAuthState) {
    Operation.call(this, [AuthEventType.SIGN_IN_VIA_REDIRECT, AuthEventType.LINK_VIA_REDIRECT,
                          AuthEventType.REAUTH_VIA_REDIRECT, AuthEventType.UNKNOWN], undefined, bypassAuthState);
    this.eventId = null;
  }
  RedirectAction.prototype = Object.create(Operation.prototype);
  RedirectAction.prototype.execute = function () {                    // :65-89
    var self = this;
    var key = auth._key();
    var ready = redirectOutcomeMap[key];
    var prepare;
    if (!ready) {
      prepare = getAndClearPendingRedirectStatus().then(function (hasPendingRedirect) {
        return hasPendingRedirect ? Operation.prototype.execute.call(self) : null;
      }).then(function (result) {
        ready = function () { return Promise.resolve(result); };
      }, function (error) {
        ready = function () { return Promise.reject(error); };
      }).then(function () {
        redirectOutcomeMap[key] = ready;
      });
    } else {
      prepare = Promise.resolve();
    }
    return prepare.then(function () {
      if (!self.bypassAuthState) {
        redirectOutcomeMap[key] = function () { return Promise.resolve(null); };
      }
      return ready();
    });
  };
  RedirectAction.prototype.onAuthEvent = function (event) {           // :91-109
    var self = this;
    if (event.type === AuthEventType.SIGN_IN_VIA_REDIRECT) {
      return Operation.prototype.onAuthEvent.call(this, event);
    } else if (event.type === AuthEventType.UNKNOWN) {
      this.resolve(null);
      return Promise.resolve();
    }
    if (event.eventId) {
      return auth._redirectUserForId(event.eventId).then(function (user) {
        if (user) {
          self.user = user;
          return Operation.prototype.onAuthEvent.call(self, event);
        }
        self.resolve(null);
      });
    }
    return Promise.resolve();
  };
  RedirectAction.prototype.onExecution = function () {
    return Promise.resolve();
  };

  function getAndClearPendingRedirectStatus() {                       // redirect.ts:116-128
    var key = persistenceKey('pendingRedirect');
    var hasPendingRedirect = sessionPersistence.get(key) === 'true';
    sessionPersistence.remove(key);
    return Promise.resolve(hasPendingRedirect);
  }

  function setPendingRedirectStatus() {                               // redirect.ts:130-135
    sessionPersistence.set(persistenceKey('pendingRedirect'), 'true');
    return Promise.resolve();
  }

  // _getRedirectResult (platform_browser/strategies/redirect.ts:309-331)
  function getRedirectResultInternal(bypassAuthState) {
    var action = new RedirectAction(bypassAuthState);
    return action.execute().then(function (result) {
      if (result && !bypassAuthState) {
        delete result.user._redirectEventId;
        return auth._persistUserIfCurrent(result.user).then(function () {
          return auth._setRedirectUser(null);
        }).then(function () { return result; });
      }
      return result;
    });
  }

  function prepareUserForRedirect(user) {                              // redirect.ts:333-339
    var eventId = generateEventId(user.uid + ':::');
    user._redirectEventId = eventId;
    return auth._setRedirectUser(user).then(function () {
      return auth._persistUserIfCurrent(user);
    }).then(function () { return eventId; });
  }

  function assertLinkedStatus(expected, user, providerId) {           // link_unlink.ts:74-87
    return reloadWithoutSaving(user).then(function () {
      var ids = user.providerData.map(function (p) { return p.providerId; });
      assert((ids.indexOf(providerId) >= 0) === expected, expected === false ? 'provider-already-linked'
        : 'no-such-provider');
    });
  }

  // ==============================================================================================================
  // Public API, as an app calls it
  // ==============================================================================================================

  function requireUser() {
    if (!auth.currentUser) {
      var error = new Error('the app has no signed-in user (auth.currentUser is null)');
      error.code = 'harness/no-current-user';
      throw error;
    }
    return auth.currentUser;
  }

  var api = {
    signInWithPopup: function (spec) {                                 // popup.ts:91-111
      var provider = makeProvider(spec);
      return new PopupOperation(AuthEventType.SIGN_IN_VIA_POPUP, provider).executeNotNull();
    },
    reauthenticateWithPopup: function (spec) {                         // popup.ts:141-162
      var user = requireUser();
      var provider = makeProvider(spec);
      return new PopupOperation(AuthEventType.REAUTH_VIA_POPUP, provider, user).executeNotNull();
    },
    linkWithPopup: function (spec) {                                   // popup.ts:189-206
      var user = requireUser();
      var provider = makeProvider(spec);
      return new PopupOperation(AuthEventType.LINK_VIA_POPUP, provider, user).executeNotNull();
    },
    signInWithRedirect: function (spec) {                              // platform_browser/strategies/redirect.ts:96-120
      var provider = makeProvider(spec);
      return auth._initializationPromise.then(function () {
        return setPendingRedirectStatus();
      }).then(function () {
        return resolver._openRedirect(provider, AuthEventType.SIGN_IN_VIA_REDIRECT);
      });
    },
    reauthenticateWithRedirect: function (spec) {                      // redirect.ts:168-195
      var user = requireUser();
      var provider = makeProvider(spec);
      return auth._initializationPromise.then(function () {
        return setPendingRedirectStatus();
      }).then(function () {
        return prepareUserForRedirect(user);
      }).then(function (eventId) {
        return resolver._openRedirect(provider, AuthEventType.REAUTH_VIA_REDIRECT, eventId);
      });
    },
    linkWithRedirect: function (spec) {                                // redirect.ts:235-258
      var user = requireUser();
      var provider = makeProvider(spec);
      return auth._initializationPromise.then(function () {
        return assertLinkedStatus(false, user, provider.providerId);
      }).then(function () {
        return setPendingRedirectStatus();
      }).then(function () {
        return prepareUserForRedirect(user);
      }).then(function (eventId) {
        return resolver._openRedirect(provider, AuthEventType.LINK_VIA_REDIRECT, eventId);
      });
    },
    getRedirectResult: function () {                                   // redirect.ts:301-307
      return auth._initializationPromise.then(function () {
        return getRedirectResultInternal(false);
      });
    },
    // Setup helpers: a signed-in user for link / reauth tests.
    signInAnonymously: function () {                                  // core/strategies/anonymous.ts:41-68
      return auth._initializationPromise.then(function () {
        if (auth.currentUser && auth.currentUser.isAnonymous) {
          return {user: auth.currentUser, providerId: null, operationType: OperationType.SIGN_IN};
        }
        return performSignInRequest('POST', '/v1/accounts:signUp', addTidIfNecessary({returnSecureToken: true}))
          .then(function (response) {
            return credentialFromIdTokenResponse(OperationType.SIGN_IN, response, true);
          }).then(function (cred) {
            return auth._updateCurrentUser(cred.user).then(function () { return cred; });
          });
      });
    },
    signInWithEmailAndPassword: function (args) {                      // core/credentials/email.ts:113-129
      var request = {returnSecureToken: true, email: args.email, password: args.password,
                     clientType: 'CLIENT_TYPE_WEB'};
      return performSignInRequest('POST', '/v1/accounts:signInWithPassword', addTidIfNecessary(request))
        .then(function (response) {
          return credentialFromIdTokenResponse(OperationType.SIGN_IN, response, false);
        }).then(function (cred) {
          return auth._updateCurrentUser(cred.user).then(function () { return cred; });
        });
    },
    signInWithCustomToken: function (args) {                           // core/strategies/custom_token.ts
      var request = {token: args.token, returnSecureToken: true};
      return performSignInRequest('POST', '/v1/accounts:signInWithCustomToken', addTidIfNecessary(request))
        .then(function (response) {
          return credentialFromIdTokenResponse(OperationType.SIGN_IN, response, false);
        }).then(function (cred) {
          return auth._updateCurrentUser(cred.user).then(function () { return cred; });
        });
    },
    signOut: function () {
      return auth.signOut().then(function () { return null; });
    },
    reload: function () {                                              // reload.ts:84-93
      var user = requireUser();
      return reloadWithoutSaving(user).then(function () {
        return auth._persistUserIfCurrent(user);
      }).then(function () { return userView(user); });
    },
    getIdToken: function (args) {
      return requireUser().getIdToken(!!(args && args.forceRefresh));
    }
  };

  // ==============================================================================================================
  // Results for the test: JSON views, ops, DOM
  // ==============================================================================================================

  function userView(user) {
    if (!user) {
      return null;
    }
    var view = user.toJSON();
    view.idToken = user.stsTokenManager.accessToken;
    view.refreshToken = user.stsTokenManager.refreshToken;
    view.expirationTime = user.stsTokenManager.expirationTime;
    return clone(view);
  }

  // getAdditionalUserInfo (core/user/additional_user_info.ts:24-75)
  function additionalUserInfo(response) {
    if (!response) {
      return null;
    }
    var profile = response.rawUserInfo ? JSON.parse(response.rawUserInfo) : {};
    var isNewUser = !!(response.isNewUser || response.kind === 'identitytoolkit#SignupNewUserResponse');
    var providerId = response.providerId;
    if (!providerId && response.idToken) {
      var parsed = parseToken(response.idToken);
      var signInProvider = parsed && parsed.firebase && parsed.firebase.sign_in_provider;
      if (signInProvider) {
        return {isNewUser: isNewUser,
                providerId: signInProvider !== 'anonymous' && signInProvider !== 'custom' ? signInProvider : null,
                profile: {}};
      }
    }
    if (!providerId) {
      return null;
    }
    if (providerId === 'custom' || providerId === 'anonymous') {
      return {isNewUser: isNewUser, providerId: null, profile: {}};
    }
    var info = {isNewUser: isNewUser, providerId: providerId, profile: profile};
    if (providerId === 'github.com') {
      info.username = typeof profile.login === 'string' ? profile.login : null;
    } else if (providerId === 'twitter.com') {
      info.username = response.screenName || null;
    }
    return info;
  }

  function credentialView(cred) {
    if (!cred || typeof cred !== 'object' || !cred.user) {
      return clone(cred === undefined ? null : cred);
    }
    var info;
    try {
      info = clone(additionalUserInfo(cred._tokenResponse));
    } catch (error) {
      // getAdditionalUserInfo() would throw in the app (e.g. rawUserInfo that is not JSON); keep the result.
      info = {harnessError: 'getAdditionalUserInfo threw: ' + String(error)};
    }
    return {
      operationType: cred.operationType,
      providerId: cred.providerId,
      user: userView(cred.user),
      _tokenResponse: clone(cred._tokenResponse) || null,
      additionalUserInfo: info
    };
  }

  var opCounter = 0;
  function startOp(method, args) {
    var id = ++opCounter;
    var record = {id: id, method: method, args: clone(args) || null, state: 'pending', result: null,
                  error: null, started: Date.now(), settled: null};
    harness.ops[id] = record;
    var promise;
    try {
      if (!api[method]) {
        throw new Error('unknown method ' + method);
      }
      if (harness.configError) {
        throw new Error(harness.configError);
      }
      promise = Promise.resolve(api[method](args || {}));
    } catch (error) {
      promise = Promise.reject(error);
    }
    record.promise = promise.then(function (value) {
      var view;
      try {
        view = credentialView(value);
      } catch (error) {
        view = {harnessError: 'could not serialize the result: ' + String(error)};
      }
      record.state = 'fulfilled';
      record.result = view;
      record.settled = Date.now();
      harness.lastResult = record.result;
      render();
      return record;
    }, function (error) {
      record.state = 'rejected';
      record.error = serializeError(error);
      record.settled = Date.now();
      harness.lastError = record.error;
      render();
      return record;
    });
    render();
    return record;
  }

  function publicRecord(record) {
    if (!record) {
      return null;
    }
    return {id: record.id, method: record.method, args: record.args, state: record.state,
            result: record.result, error: record.error, started: record.started, settled: record.settled};
  }

  function journal(entry) {
    entry.at = Date.now();
    entry.page = location.href;
    var list = [];
    try {
      list = JSON.parse(sessionStorage.getItem(HARNESS_JOURNAL_KEY) || '[]');
    } catch (e) {
      list = [];
    }
    list.push(entry);
    sessionStorage.setItem(HARNESS_JOURNAL_KEY, JSON.stringify(list));
  }

  function text(id, value, attrs) {
    var el = document.getElementById(id);
    if (!el) {
      return;
    }
    el.textContent = value;
    Object.keys(attrs || {}).forEach(function (name) {
      if (attrs[name] === null || attrs[name] === undefined) {
        el.removeAttribute(name);
      } else {
        el.setAttribute(name, attrs[name]);
      }
    });
  }

  function render() {
    var user = auth.currentUser;
    text('current-user', user ? (user.uid + (user.email ? ' <' + user.email + '>' : '') + ' [' +
      user.providerData.map(function (p) { return p.providerId; }).join(', ') + ']') : 'signed out',
      {'data-uid': user ? user.uid : null});
    text('sdk-ready', harness.ready ? 'ready' : 'initializing', {'data-ready': harness.ready ? 'true' : 'false'});
    var redirect = harness.redirect;
    text('redirect-result', !redirect ? '' : redirect.state === 'pending' ? 'pending'
      : redirect.state === 'rejected' ? 'error ' + redirect.error.code
      : redirect.result ? redirect.result.operationType + ' ' + redirect.result.user.uid : 'null',
      {'data-state': redirect ? redirect.state : null,
       'data-code': redirect && redirect.error ? redirect.error.code : null});
    text('last-result', harness.lastResult ? JSON.stringify(harness.lastResult.operationType ?
      {operationType: harness.lastResult.operationType, providerId: harness.lastResult.providerId,
       uid: harness.lastResult.user.uid} : harness.lastResult) : '',
      {'data-uid': harness.lastResult && harness.lastResult.user ? harness.lastResult.user.uid : null});
    text('last-error', harness.lastError ? harness.lastError.code + ' ' + harness.lastError.message : '',
      {'data-code': harness.lastError ? harness.lastError.code : null});
    text('event-log', harness.events.map(function (e) {
      var ev = e.authEvent || {};
      return (e.status || e.error) + '  ' + ev.type + (ev.eventId ? ' #' + ev.eventId : '') +
        (ev.error ? ' ' + ev.error.code : '');
    }).join('\n'));
  }

  /*
   * SURFACE — window.__sdk
   *   ready, configError, initError         initialization state (ready: auth init incl. redirect completion done)
   *   config                                 the parsed query (+ emulatorUrl)
   *   pendingRedirectAtLoad                  sessionStorage firebase:pendingRedirect:K:N was "true" at page load
   *   journal                                harness entries from earlier loads in this tab ({kind:'redirect', url})
   *   currentUser                            getter: the signed-in user as JSON (toJSON + idToken, refreshToken),
   *                                          or null
   *   lastResult / lastError                 the latest settled op's UserCredential view / {code, message, customData}
   *   redirect                               the record of the getRedirectResult() the app calls on load
   *   requests, idpRequests                  every REST call / every signInWithIdp body, in order
   *   events                                 every message the 'authEvent' handler received and the status it replied
   *   popups, handlerUrls, iframe, gapiScriptUrl, webStorageSupport
   *   gapiLog                                getter: gapi double's log in this window
   *   start(method, args) -> id              run an API method without waiting (popup and redirect flows)
   *   wait(id) -> Promise<record>            a record {id, method, args, state, result, error}
   *   call(method, args) -> Promise<record>  start + wait
   *   op(id) -> record; snapshot() -> JSON of all of the above
   *   storage()                              the firebase:* keys of localStorage and sessionStorage, parsed
   * Methods: signInWithPopup, linkWithPopup, reauthenticateWithPopup, signInWithRedirect, linkWithRedirect,
   *   reauthenticateWithRedirect, getRedirectResult, signInAnonymously, signInWithEmailAndPassword,
   *   signInWithCustomToken, signOut, reload, getIdToken. Provider args: {providerId, scopes?, customParameters?,
   *   generic?}.
   */
  harness.start = function (method, args) {
    return startOp(method, args).id;
  };
  harness.wait = function (id) {
    var record = harness.ops[id];
    if (!record) {
      return Promise.reject(new Error('no op ' + id));
    }
    return record.promise.then(publicRecord);
  };
  harness.call = function (method, args) {
    return startOp(method, args).promise.then(publicRecord);
  };
  harness.op = function (id) {
    return publicRecord(harness.ops[id]);
  };
  harness.storage = function () {
    var out = {local: {}, session: {}};
    [['local', window.localStorage], ['session', window.sessionStorage]].forEach(function (pair) {
      for (var i = 0; i < pair[1].length; i++) {
        var key = pair[1].key(i);
        if (key && key.indexOf('firebase:') === 0) {
          try {
            out[pair[0]][key] = JSON.parse(pair[1].getItem(key));
          } catch (e) {
            out[pair[0]][key] = pair[1].getItem(key);
          }
        }
      }
    });
    return out;
  };
  Object.defineProperty(harness, 'currentUser', {enumerable: true, get: function () {
    return userView(auth.currentUser);
  }});
  Object.defineProperty(harness, 'gapiLog', {enumerable: true, get: function () {
    return window.gapi && window.gapi.__fake ? clone(window.gapi.__fake.log) : null;
  }});
  harness.snapshot = function () {
    var ops = {};
    Object.keys(harness.ops).forEach(function (id) { ops[id] = publicRecord(harness.ops[id]); });
    return clone({
      version: harness.version, ready: harness.ready, configError: harness.configError, initError: harness.initError,
      config: harness.config, pendingRedirectAtLoad: harness.pendingRedirectAtLoad, journal: harness.journal,
      currentUser: harness.currentUser, lastResult: harness.lastResult, lastError: harness.lastError,
      redirect: publicRecord(harness.redirect), ops: ops, requests: harness.requests, idpRequests: harness.idpRequests,
      events: harness.events, popups: harness.popups, handlerUrls: harness.handlerUrls, iframe: harness.iframe,
      gapiScriptUrl: harness.gapiScriptUrl || null, webStorageSupport: harness.webStorageSupport || null,
      storage: harness.storage()
    });
  };

  // ==============================================================================================================
  // Page load: initialize auth (completes a pending redirect), then getRedirectResult() as an app does
  // ==============================================================================================================

  function formArgs(method) {
    function value(id) {
      var el = document.getElementById(id);
      return el ? el.value.trim() : '';
    }
    if (method === 'signInWithEmailAndPassword') {
      return {email: value('email'), password: value('password')};
    }
    if (method === 'signInWithCustomToken') {
      return {token: value('custom-token')};
    }
    var scopes = value('scopes');
    var custom = value('custom-parameters');
    return {
      providerId: value('provider-id'),
      scopes: scopes ? scopes.split(',').map(function (s) { return s.trim(); }).filter(Boolean) : [],
      customParameters: custom ? JSON.parse(custom) : {}
    };
  }

  function wireButtons() {
    var buttons = document.querySelectorAll('button[data-method]');
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].addEventListener('click', function (event) {
        var method = event.currentTarget.getAttribute('data-method');
        var args;
        try {
          args = formArgs(method);
        } catch (error) {
          harness.lastError = serializeError(error);
          render();
          return;
        }
        startOp(method, args);
      });
    }
  }

  function boot() {
    try {
      harness.journal = JSON.parse(sessionStorage.getItem(HARNESS_JOURNAL_KEY) || '[]');
    } catch (e) {
      harness.journal = [];
    }
    wireButtons();
    if (harness.configError) {
      text('sdk-ready', 'configuration error: ' + harness.configError, {'data-ready': 'error'});
      return;
    }
    harness.pendingRedirectAtLoad = sessionStorage.getItem(persistenceKey('pendingRedirect')) === '"true"';
    auth.initialize().then(function () {
      harness.ready = true;
      render();
    }, function (error) {
      harness.initError = serializeError(error);
      harness.ready = true;
      render();
    });
    harness.redirect = startOp('getRedirectResult', {});
    render();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', boot);
  } else {
    boot();
  }
})();
