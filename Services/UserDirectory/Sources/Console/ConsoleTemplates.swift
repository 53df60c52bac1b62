import Mustache

/// The console's pages as Mustache templates (issue #25). `{{name}}` escapes for HTML; nothing here
/// uses the unescaped `{{{…}}}`. Every page extends `layout`; the strings are compiled in, so the
/// binary needs no resource directory. No inline script or style: the CSP allows neither.
enum ConsoleTemplates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in all { try library.register(text, named: name) }
        return library
    }

    static let all: [(String, String)] = [
        ("layout", layout), ("signIn", signIn), ("error", error), ("home", home), ("users", users),
        ("user", user), ("methods", methods), ("cleanup", cleanup), ("audit", audit), ("tenants", tenants),
        ("credentials", credentials), ("templates", templates), ("transfer", transfer),
        ("providers", providers), ("serviceAccounts", serviceAccounts),
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Tessera console</title>
        <link rel="icon" href="/console/assets/icon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
        <a class="brand" href="/console/">Tessera console</a>
        {{#chrome}}
        <span class="who">{{who}}</span>
        <form method="post" action="/console/sign-out" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="link">Sign out</button>
        </form>
        {{/chrome}}
        </header>
        {{#chrome}}{{#scopeName}}
        <nav class="scope" aria-label="{{scopeName}}">
        <span class="scope-name">{{scopeName}}</span>
        <a href="{{base}}/users"{{#onUsers}} aria-current="page"{{/onUsers}}>Users</a>
        <a href="{{base}}/sign-in-methods"{{#onMethods}} aria-current="page"{{/onMethods}}>Sign-in methods</a>
        <a href="{{base}}/providers"{{#onProviders}} aria-current="page"{{/onProviders}}>Identity providers</a>
        <a href="{{base}}/templates"{{#onTemplates}} aria-current="page"{{/onTemplates}}>Mail templates</a>
        <a href="{{base}}/cleanup"{{#onCleanup}} aria-current="page"{{/onCleanup}}>Anonymous cleanup</a>
        <a href="{{base}}/audit"{{#onAudit}} aria-current="page"{{/onAudit}}>Audit log</a>
        <a href="{{base}}/service-accounts"{{#onServiceAccounts}} aria-current="page"{{/onServiceAccounts}}>Service accounts</a>
        {{#projectAdmin}}<a href="{{base}}/credentials"{{#onCredentials}} aria-current="page"{{/onCredentials}}>Admin credentials</a>{{/projectAdmin}}
        </nav>
        {{/scopeName}}{{/chrome}}
        <main id="main">
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        {{$content}}{{/content}}
        </main>
        </body>
        </html>
        """

    static let signIn = """
        {{<layout}}{{$content}}
        <h1>Sign in</h1>
        <form method="post" action="/console/sign-in" class="card narrow">
        <label for="credential">Admin credential</label>
        <input id="credential" name="credential" type="password" autocomplete="current-password" required
         {{#error}}aria-invalid="true" aria-describedby="credential-error"{{/error}}>
        {{#error}}<p id="credential-error" class="field-error">{{error}}</p>{{/error}}
        <p class="hint">The project's bootstrap token or an admin credential (<code>tsa_…</code>). A tenant's
        credential opens that tenant only.</p>
        <button type="submit">Sign in</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let error = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p class="error-text">{{message}}</p>
        <p><a href="{{back}}">{{backLabel}}</a></p>
        {{/content}}{{/layout}}
        """

    static let home = """
        {{<layout}}{{$content}}
        <h1>Scopes</h1>
        <div class="table-wrap">
        <table>
        <caption>The project's default scope and its tenants</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Tenant id</th><th scope="col">Sign-in</th></tr></thead>
        <tbody>
        {{#scopes}}
        <tr><td><a href="{{link}}/users">{{name}}</a></td><td><code>{{id}}</code></td><td>{{state}}</td></tr>
        {{/scopes}}
        </tbody>
        </table>
        </div>
        <p><a href="/console/tenants">Manage tenants</a></p>
        {{/content}}{{/layout}}
        """

    static let users = """
        {{<layout}}{{$content}}
        <h1>Users</h1>
        <form method="get" action="{{base}}/users" class="filters" role="search">
        <div class="field">
        <label for="q">Email or user id</label>
        <input id="q" name="q" type="search" value="{{q}}" placeholder="ada@example.com or a user id">
        </div>
        <div class="field">
        <label for="provider">Provider</label>
        <select id="provider" name="provider" data-autosubmit>
        {{#providers}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/providers}}
        </select>
        </div>
        <div class="field">
        <label for="show">Show</label>
        <select id="show" name="show" data-autosubmit>
        {{#shows}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/shows}}
        </select>
        </div>
        <div class="field">
        <label for="sort">Sort by</label>
        <select id="sort" name="sort" data-autosubmit>
        {{#sorts}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/sorts}}
        </select>
        </div>
        <button type="submit">Search</button>
        </form>
        <p class="count" role="status">{{countText}} · <a href="{{base}}/transfer">Import and export</a></p>
        <div class="table-wrap">
        <table>
        <caption class="visually-hidden">Users</caption>
        <thead><tr><th scope="col">Email</th><th scope="col">User id</th><th scope="col">Providers</th>
        <th scope="col">Created</th><th scope="col">Last sign-in</th><th scope="col">State</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr>
        <td><a href="{{base}}/users/{{localIdPath}}">{{emailText}}</a></td>
        <td><code>{{localId}}</code></td>
        <td>{{providers}}</td>
        <td>{{created}}</td>
        <td>{{lastSignIn}}</td>
        <td>{{#badges}}<span class="badge {{kind}}">{{label}}</span> {{/badges}}</td>
        </tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="6">No user matches.</td></tr>{{/rows}}
        </tbody>
        </table>
        </div>
        <nav class="pager" aria-label="Pages">
        {{#previous}}<a href="{{previous}}" rel="prev">Previous page</a>{{/previous}}
        {{#next}}<a href="{{next}}" rel="next">Next page</a>{{/next}}
        </nav>
        <form method="post" action="{{base}}/users" class="card" id="new-user">
        <h2>New user</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="new-email">Email</label>
        <input id="new-email" name="email" type="email" value="{{newEmail}}" autocomplete="off"
         {{#emailError}}aria-invalid="true" aria-describedby="new-email-error"{{/emailError}}>
        {{#emailError}}<p id="new-email-error" class="field-error">{{emailError}}</p>{{/emailError}}
        <label for="new-password">Password</label>
        <input id="new-password" name="password" type="password" autocomplete="new-password"
         {{#passwordError}}aria-invalid="true" aria-describedby="new-password-error"{{/passwordError}}>
        {{#passwordError}}<p id="new-password-error" class="field-error">{{passwordError}}</p>{{/passwordError}}
        <label for="new-name">Display name (optional)</label>
        <input id="new-name" name="displayName" value="{{newDisplayName}}"
         {{#displayNameError}}aria-invalid="true" aria-describedby="new-name-error"{{/displayNameError}}>
        {{#displayNameError}}<p id="new-name-error" class="field-error">{{displayNameError}}</p>{{/displayNameError}}
        <div class="check"><input type="checkbox" id="new-verified" name="emailVerified" value="on"{{#newVerified}} checked{{/newVerified}}>
        <label for="new-verified">The email address is verified</label></div>
        <button type="submit">Create user</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let user = """
        {{<layout}}{{$content}}
        <p><a href="{{base}}/users">← Users</a></p>
        <h1>{{heading}}</h1>
        <p>{{#badges}}<span class="badge {{kind}}">{{label}}</span> {{/badges}}</p>
        <section class="card" aria-labelledby="profile">
        <h2 id="profile">Profile</h2>
        <dl class="facts">
        {{#facts}}<dt>{{name}}</dt><dd>{{value}}</dd>{{/facts}}
        </dl>
        </section>
        <form method="post" action="{{base}}/users/{{localIdPath}}/profile" class="card" id="profile-form">
        <h2>Edit</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#profile}}
        <label for="edit-name">Display name</label>
        <input id="edit-name" name="displayName" value="{{displayName}}"
         {{#displayNameError}}aria-invalid="true" aria-describedby="edit-name-error"{{/displayNameError}}>
        {{#displayNameError}}<p id="edit-name-error" class="field-error">{{displayNameError}}</p>{{/displayNameError}}
        <label for="edit-email">Email</label>
        <input id="edit-email" name="email" type="email" value="{{email}}"
         {{#emailError}}aria-invalid="true" aria-describedby="edit-email-error"{{/emailError}}>
        {{#emailError}}<p id="edit-email-error" class="field-error">{{emailError}}</p>{{/emailError}}
        <label for="edit-phone">Phone number (E.164)</label>
        <input id="edit-phone" name="phoneNumber" value="{{phoneNumber}}" placeholder="+15555550100"
         {{#phoneNumberError}}aria-invalid="true" aria-describedby="edit-phone-error"{{/phoneNumberError}}>
        {{#phoneNumberError}}<p id="edit-phone-error" class="field-error">{{phoneNumberError}}</p>{{/phoneNumberError}}
        <label for="edit-claims">Custom claims (a JSON object)</label>
        <textarea id="edit-claims" name="claims" rows="3"
         {{#claimsError}}aria-invalid="true" aria-describedby="edit-claims-error"{{/claimsError}}>{{claims}}</textarea>
        {{#claimsError}}<p id="edit-claims-error" class="field-error">{{claimsError}}</p>{{/claimsError}}
        {{/profile}}
        <label for="edit-password">New password (leave empty to keep it)</label>
        <input id="edit-password" name="password" type="password" autocomplete="new-password"
         {{#passwordError}}aria-invalid="true" aria-describedby="edit-password-error"{{/passwordError}}>
        {{#passwordError}}<p id="edit-password-error" class="field-error">{{passwordError}}</p>{{/passwordError}}
        <button type="submit">Save changes</button>
        </form>
        <section class="card" aria-labelledby="providers">
        <h2 id="providers">Sign-in methods</h2>
        <div class="table-wrap"><table>
        <thead><tr><th scope="col">Provider</th><th scope="col">Identity</th><th scope="col">Email</th></tr></thead>
        <tbody>
        {{#links}}<tr><td>{{providerId}}</td><td><code>{{rawId}}</code></td><td>{{email}}</td></tr>{{/links}}
        {{^links}}<tr><td colspan="3">None (an anonymous account).</td></tr>{{/links}}
        </tbody></table></div>
        </section>
        <section class="card" aria-labelledby="sessions">
        <h2 id="sessions">Sessions</h2>
        <div class="table-wrap"><table>
        <thead><tr><th scope="col">Signed in with</th><th scope="col">Started</th><th scope="col">Last refresh</th>
        <th scope="col">Ends</th><th scope="col">State</th></tr></thead>
        <tbody>
        {{#sessions}}<tr><td>{{provider}}</td><td>{{started}}</td><td>{{lastRefresh}}</td><td>{{ends}}</td><td>{{state}}</td></tr>{{/sessions}}
        {{^sessions}}<tr><td colspan="5">No session.</td></tr>{{/sessions}}
        </tbody></table></div>
        </section>
        <section class="card" aria-labelledby="actions">
        <h2 id="actions">Actions</h2>
        <div class="actions">
        {{#actions}}
        <form method="post" action="{{base}}/users/{{localIdPath}}/{{verb}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">{{label}}</button>
        </form>
        {{/actions}}
        </div>
        <form method="post" action="{{base}}/users/{{localIdPath}}/delete" class="danger">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="confirm">To delete this user, type <strong>{{confirmWord}}</strong></label>
        <input id="confirm" name="confirm" autocomplete="off" data-confirm="{{confirmWord}}"
         {{#deleteError}}aria-invalid="true" aria-describedby="confirm-error"{{/deleteError}}>
        {{#deleteError}}<p id="confirm-error" class="field-error">{{deleteError}}</p>{{/deleteError}}
        <button type="submit" class="danger">Delete {{heading}}</button>
        </form>
        </section>
        {{/content}}{{/layout}}
        """

    static let methods = """
        {{<layout}}{{$content}}
        <h1>Sign-in methods</h1>
        <form method="post" action="{{base}}/sign-in-methods" class="card">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <fieldset>
        <legend>Providers</legend>
        {{#providerSwitches}}
        <div class="check"><input type="checkbox" id="{{name}}" name="{{name}}" value="on"{{#on}} checked{{/on}}>
        <label for="{{name}}">{{label}}</label></div>
        {{/providerSwitches}}
        </fieldset>
        <fieldset>
        <legend>Self-service</legend>
        {{#selfService}}
        <div class="check"><input type="checkbox" id="{{name}}" name="{{name}}" value="on"{{#on}} checked{{/on}}>
        <label for="{{name}}">{{label}}</label></div>
        {{/selfService}}
        </fieldset>
        <button type="submit">Save</button>
        </form>
        <section class="card" aria-labelledby="domains-heading">
        <h2 id="domains-heading">Authorized domains</h2>
        <p>The project's: where mailed links may send users on (<code>continueUrl</code>), the app pages a
        sign-in with a provider may start from and return to, and the hosts links are built on. Each
        domain admits its subdomains; a domain with a port admits that port only.
        {{#domainsAreDefault}}These are the deployment's default (<code>TESSERA_AUTHORIZED_DOMAINS</code>).{{/domainsAreDefault}}</p>
        {{#canEditDomains}}
        <form method="post" action="{{base}}/authorized-domains" id="domains-form">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="authorized-domains">One per line</label>
        <textarea id="authorized-domains" name="authorizedDomains" rows="5" spellcheck="false"
         {{#domainsError}}aria-invalid="true" aria-describedby="domains-error"{{/domainsError}}>{{domainsText}}</textarea>
        {{#domainsError}}<p id="domains-error" class="field-error">{{domainsError}}</p>{{/domainsError}}
        <button type="submit" name="action" value="save">Save domains</button>
        {{^domainsAreDefault}}<button type="submit" name="action" value="default">Use the deployment's default</button>{{/domainsAreDefault}}
        </form>
        {{/canEditDomains}}
        {{^canEditDomains}}<ul id="domains-list">{{#authorizedDomains}}<li><code>{{.}}</code></li>{{/authorizedDomains}}</ul>
        <p class="hint">Project admins change them on the project's page.</p>{{/canEditDomains}}
        </section>
        {{/content}}{{/layout}}
        """

    static let cleanup = """
        {{<layout}}{{$content}}
        <h1>Anonymous cleanup</h1>
        <section class="card" aria-labelledby="state">
        <h2 id="state">State</h2>
        <dl class="facts">
        {{#facts}}<dt>{{name}}</dt><dd>{{value}}</dd>{{/facts}}
        </dl>
        <form method="post" action="{{base}}/cleanup" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="enabled" value="{{toggleValue}}">
        <button type="submit">{{toggleLabel}}</button>
        </form>
        </section>
        <section class="card" aria-labelledby="preview">
        <h2 id="preview">Preview</h2>
        <p>{{previewText}}</p>
        {{#chart}}
        <figure>
        <svg class="chart" viewBox="0 0 {{width}} {{height}}" role="img" aria-labelledby="chart-title">
        <title id="chart-title">{{title}}</title>
        {{#bars}}<rect class="bar" x="{{x}}" y="{{y}}" width="{{w}}" height="{{h}}"><title>{{tip}}</title></rect>
        <text class="bar-label" x="{{labelX}}" y="{{countY}}" text-anchor="middle">{{count}}</text>
        <text class="axis-label" x="{{labelX}}" y="{{axisY}}" text-anchor="middle">{{week}}</text>{{/bars}}
        </svg>
        <figcaption>{{title}}</figcaption>
        </figure>
        {{/chart}}
        </section>
        {{/content}}{{/layout}}
        """

    static let audit = """
        {{<layout}}{{$content}}
        <h1>Audit log</h1>
        <form method="get" action="{{base}}/audit" class="filters" role="search">
        <div class="field"><label for="actor">Actor</label><input id="actor" name="actor" value="{{actor}}"></div>
        <div class="field"><label for="action">Action contains</label><input id="action" name="action" value="{{action}}"></div>
        <button type="submit">Filter</button>
        </form>
        <div class="table-wrap">
        <table>
        <caption class="visually-hidden">Audit entries, newest first</caption>
        <thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th>
        <th scope="col">Target</th><th scope="col">Request</th></tr></thead>
        <tbody>
        {{#entries}}<tr><td>{{time}}</td><td><code>{{actor}}</code></td><td>{{action}}</td><td>{{target}}</td>
        <td><code>{{requestId}}</code></td></tr>{{/entries}}
        {{^entries}}<tr><td colspan="5">No entry.</td></tr>{{/entries}}
        </tbody>
        </table>
        </div>
        {{#older}}<nav class="pager" aria-label="Pages"><a href="{{older}}">Older entries</a></nav>{{/older}}
        {{/content}}{{/layout}}
        """

    static let templates = """
        {{<layout}}{{$content}}
        <h1>Mail templates</h1>
        <p class="hint">Placeholders: %APP_NAME% (the scope's display name), %LINK% (required), %EMAIL%,
        %NEW_EMAIL%, %DISPLAY_NAME%.</p>
        {{#types}}
        <section class="card" id="{{type}}" aria-labelledby="{{type}}-heading">
        <h2 id="{{type}}-heading">{{label}}{{^custom}} <span class="badge">built-in</span>{{/custom}}</h2>
        <form method="post" action="{{base}}/templates/{{type}}">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="{{type}}-subject">Subject</label>
        <input id="{{type}}-subject" name="subject" value="{{subject}}" maxlength="200">
        <label for="{{type}}-body">Body</label>
        <textarea id="{{type}}-body" name="body" rows="8"
         {{#error}}aria-invalid="true" aria-describedby="{{type}}-error"{{/error}}>{{body}}</textarea>
        {{#error}}<p id="{{type}}-error" class="field-error">{{error}}</p>{{/error}}
        <button type="submit">Save {{label}}</button>
        </form>
        {{#custom}}
        <form method="post" action="{{base}}/templates/{{type}}/reset" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="link">Back to the built-in template</button>
        </form>
        {{/custom}}
        <details class="preview" open>
        <summary>Preview (sample user Ada, ada@example.com)</summary>
        <p><strong>{{previewSubject}}</strong></p>
        <pre>{{previewBody}}</pre>
        </details>
        </section>
        {{/types}}
        {{/content}}{{/layout}}
        """

    static let providers = """
        {{<layout}}{{$content}}
        <h1>Identity providers</h1>
        <section class="card" aria-labelledby="redirect-heading">
        <h2 id="redirect-heading">Redirect URI</h2>
        <p>Every provider sends its answer to one URL of Tessera's. Register it with each provider as the
        redirect (callback) URI of its app (Google, Microsoft: authorized redirect URI; Apple: Return URL;
        GitHub: authorization callback URL; Facebook: valid OAuth redirect URI; Twitter: callback URL):</p>
        <p><code id="redirect-uri">{{redirectUri}}</code></p>
        {{#publicURLUnset}}<p class="hint">The directory does not know the public URL (<code>TESSERA_PUBLIC_URL</code>
        is not set here): the token service builds the URL from the address the browser reaches it at.</p>{{/publicURLUnset}}
        </section>
        <h2>Built-in providers</h2>
        {{#builtIn}}
        <form method="post" action="{{base}}/providers/{{id}}" class="card" id="{{field}}">
        <h3>{{label}} <code>{{id}}</code></h3>
        <p class="hint">Trusted for {{trustedFor}}: its sign-in takes over an unverified account with that address.</p>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <div class="check"><input type="checkbox" id="{{field}}-enabled" name="enabled" value="on"{{#enabled}} checked{{/enabled}}>
        <label for="{{field}}-enabled">Enabled</label></div>
        <label for="{{field}}-client">Client id</label>
        <input id="{{field}}-client" name="clientId" value="{{clientId}}"
         {{#error}}aria-invalid="true" aria-describedby="{{field}}-error"{{/error}}>
        {{#error}}<p id="{{field}}-error" class="field-error">{{error}}</p>{{/error}}
        <label for="{{field}}-secret">Client secret {{#secretSet}}(set; leave empty to keep it){{/secretSet}}</label>
        <input id="{{field}}-secret" name="clientSecret" type="password" autocomplete="off">
        {{#apple}}
        <fieldset>
        <legend>Sign in with Apple on the web (the code flow's key)</legend>
        <label for="apple-team">Team id</label><input id="apple-team" name="appleTeamId" value="{{teamId}}">
        <label for="apple-key-id">Key id</label><input id="apple-key-id" name="appleKeyId" value="{{keyId}}">
        <label for="apple-key">Private key (the .p8 file's PEM) {{#keySet}}(set; leave empty to keep it){{/keySet}}</label>
        <textarea id="apple-key" name="applePrivateKey" rows="4" autocomplete="off" spellcheck="false"></textarea>
        </fieldset>
        {{/apple}}
        <p class="hint">Redirect URI: <code>{{redirectUri}}</code></p>
        <button type="submit">Save {{label}}</button>
        </form>
        {{/builtIn}}
        <h2>OIDC providers</h2>
        {{#oidc}}
        <section class="card" id="{{field}}">
        <h3>{{name}} <code>{{id}}</code></h3>
        <p class="hint">Issuer {{issuer}} · client id {{clientId}} · {{flow}} · redirect URI <code>{{redirectUri}}</code></p>
        <form method="post" action="{{base}}/providers/oidc/{{id}}">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <div class="check"><input type="checkbox" id="{{field}}-enabled" name="enabled" value="on"{{#enabled}} checked{{/enabled}}>
        <label for="{{field}}-enabled">Enabled</label></div>
        <label for="{{field}}-domains">Trusted email domains (addresses it verifies; * for all)</label>
        <input id="{{field}}-domains" name="trustedEmailDomains" value="{{domains}}"
         {{#error}}aria-invalid="true" aria-describedby="{{field}}-error"{{/error}}>
        {{#error}}<p id="{{field}}-error" class="field-error">{{error}}</p>{{/error}}
        <button type="submit">Save {{name}}</button>
        </form>
        <form method="post" action="{{base}}/providers/oidc/{{id}}/delete" class="inline confirm-row">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger">Remove {{name}}</button>
        </form>
        </section>
        {{/oidc}}
        {{^oidc}}<p>No OIDC provider yet.</p>{{/oidc}}
        <form method="post" action="{{base}}/providers/oidc" class="card" id="new-oidc">
        <h3>New OIDC provider</h3>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="oidc-id">Provider id (oidc.…)</label>
        <input id="oidc-id" name="providerId" placeholder="oidc.example"
         {{#newError}}aria-invalid="true" aria-describedby="oidc-error"{{/newError}}>
        {{#newError}}<p id="oidc-error" class="field-error">{{newError}}</p>{{/newError}}
        <label for="oidc-name">Display name</label><input id="oidc-name" name="displayName">
        <label for="oidc-issuer">Issuer (https)</label><input id="oidc-issuer" name="issuer">
        <label for="oidc-client">Client id</label><input id="oidc-client" name="clientId">
        <label for="oidc-secret">Client secret (optional)</label>
        <input id="oidc-secret" name="clientSecret" type="password" autocomplete="off">
        <label for="oidc-domains">Trusted email domains</label><input id="oidc-domains" name="trustedEmailDomains">
        <div class="check"><input type="checkbox" id="oidc-enabled" name="enabled" value="on" checked>
        <label for="oidc-enabled">Enabled</label></div>
        <button type="submit">Add provider</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let transfer = """
        {{<layout}}{{$content}}
        <p><a href="{{base}}/users">← Users</a></p>
        <h1>Import and export</h1>
        <section class="card" aria-labelledby="export-heading">
        <h2 id="export-heading">Export</h2>
        <p>Every user of this scope in the Firebase CLI's format (<code>firebase auth:import</code> reads it),
        password hashes included, with this scope's hash parameters under <code>hashConfig</code>.</p>
        <p><a href="{{base}}/export.json" download>Download users (JSON)</a></p>
        </section>
        <form class="card" id="import" data-import="{{base}}/import" data-csrf="{{csrf}}" aria-labelledby="import-heading">
        <h2 id="import-heading">Import</h2>
        <p>A Firebase CLI export (<code>{"users": [...]}</code>) or a file exported here. Users whose id is
        taken are reported and skipped; the others are created with their password hashes.</p>
        <noscript><p class="field-error">Importing reads the file in your browser: it needs JavaScript.
        The admin API's <code>accounts:batchCreate</code> takes the same file without it.</p></noscript>
        <label for="import-file">Export file</label>
        <input id="import-file" name="file" type="file" accept="application/json,.json" required>
        <fieldset>
        <legend>The hash parameters of its passwords (Firebase scrypt)</legend>
        <p class="hint">Filled in from the file when it has them; this scope's own are:
        rounds {{rounds}}, memory cost {{memCost}}.</p>
        <label for="import-signer">Signer key (base64)</label><input id="import-signer" name="signerKey">
        <label for="import-separator">Salt separator (base64)</label><input id="import-separator" name="saltSeparator">
        <label for="import-rounds">Rounds</label><input id="import-rounds" name="rounds" inputmode="numeric" value="8">
        <label for="import-mem">Memory cost</label><input id="import-mem" name="memoryCost" inputmode="numeric" value="14">
        </fieldset>
        <button type="submit">Import</button>
        <progress id="import-progress" value="0" max="1" hidden></progress>
        <p id="import-status" role="status" aria-live="polite"></p>
        <ul id="import-failures" class="failures"></ul>
        </form>
        {{/content}}{{/layout}}
        """

    static let serviceAccounts = """
        {{<layout}}{{$content}}
        <h1>Service accounts</h1>
        <p class="hint">They sign custom tokens for this scope (the Admin SDKs' <code>createCustomToken</code>).</p>
        {{#keyFile}}
        <section class="card secret" aria-labelledby="created-heading">
        <h2 id="created-heading">The new account's key file</h2>
        <p>Save it now as a JSON file: the private key is shown this once and Tessera keeps only the public key.</p>
        <pre class="secret-value" id="service-account-json">{{keyFile}}</pre>
        </section>
        {{/keyFile}}
        <div class="table-wrap">
        <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Client email</th><th scope="col">Key id</th>
        <th scope="col">Created</th><th scope="col">Revoke</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td>{{name}}</td><td><code>{{email}}</code></td><td><code>{{keyId}}</code></td><td>{{created}}</td>
        <td><form method="post" action="{{base}}/service-accounts/{{id}}/revoke" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger" aria-label="Revoke {{name}} ({{id}})">Revoke</button>
        </form></td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="5">No service account for this scope.</td></tr>{{/rows}}
        </tbody>
        </table>
        </div>
        <form method="post" action="{{base}}/service-accounts" class="card" id="new-service-account">
        <h2>New service account</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="account-name">Name</label>
        <input id="account-name" name="displayName" maxlength="100">
        <button type="submit">Create with a new key</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let credentials = """
        {{<layout}}{{$content}}
        <h1>Admin credentials</h1>
        {{#newSecret}}
        <section class="card secret" aria-labelledby="secret-heading">
        <h2 id="secret-heading">The new credential's secret</h2>
        <p>Copy it now: it is shown this once and is not stored (only its hash is).</p>
        <p><code class="secret-value">{{newSecret}}</code></p>
        </section>
        {{/newSecret}}
        <div class="table-wrap">
        <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Credential id</th><th scope="col">Created</th>
        <th scope="col">Revoke</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td>{{name}}</td><td><code>{{id}}</code></td><td>{{created}}</td>
        <td><form method="post" action="{{base}}/credentials/{{id}}/revoke" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger" aria-label="Revoke {{name}} ({{id}})">Revoke</button>
        </form></td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="4">No credential for this scope.</td></tr>{{/rows}}
        </tbody>
        </table>
        </div>
        <form method="post" action="{{base}}/credentials" class="card">
        <h2>New credential</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="credential-name">Name</label>
        <input id="credential-name" name="displayName" required maxlength="100"
         {{#nameError}}aria-invalid="true" aria-describedby="credential-name-error"{{/nameError}}>
        {{#nameError}}<p id="credential-name-error" class="field-error">{{nameError}}</p>{{/nameError}}
        <button type="submit">Create credential</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let tenants = """
        {{<layout}}{{$content}}
        <p><a href="/console/">← Scopes</a></p>
        <h1>Tenants</h1>
        <div class="table-wrap">
        <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Tenant id</th><th scope="col">Delete</th></tr></thead>
        <tbody>
        {{#rows}}
        <tr><td><a href="/console/tenants/{{id}}/users">{{name}}</a></td><td><code>{{id}}</code></td>
        <td>
        <form method="post" action="/console/tenants/{{id}}/delete" class="inline confirm-row">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="confirm-{{id}}">Type <strong>{{id}}</strong> to delete</label>
        <input id="confirm-{{id}}" name="confirm" autocomplete="off" data-confirm="{{id}}"
         {{#deleteError}}aria-invalid="true" aria-describedby="confirm-error-{{id}}"{{/deleteError}}>
        {{#deleteError}}<p id="confirm-error-{{id}}" class="field-error">{{deleteError}}</p>{{/deleteError}}
        <button type="submit" class="danger">Delete</button>
        </form>
        </td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="3">No tenant yet.</td></tr>{{/rows}}
        </tbody>
        </table>
        </div>
        <form method="post" action="/console/tenants" class="card">
        <h2>New tenant</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="displayName">Display name</label>
        <input id="displayName" name="displayName" value="{{displayName}}" required maxlength="20"
         {{#nameError}}aria-invalid="true" aria-describedby="name-error"{{/nameError}}>
        {{#nameError}}<p id="name-error" class="field-error">{{nameError}}</p>{{/nameError}}
        <p class="hint">4 to 20 characters: a letter first, then letters, digits and hyphens (Firebase's rule).</p>
        <button type="submit">Create tenant</button>
        </form>
        {{/content}}{{/layout}}
        """
}
