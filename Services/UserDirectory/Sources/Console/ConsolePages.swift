import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraConsole
import TesseraShared

/// What a user page's action buttons do; each is a POST to `…/users/{localId}/{rawValue}`.
enum UserAction: String, CaseIterable, Sendable {
    case disable
    case enable
    case verifyEmail = "verify-email"
    case revokeSessions = "revoke-sessions"
    case sendReset = "send-reset"
    case sendVerification = "send-verification"

    var label: String {
        switch self {
        case .disable: "Disable"
        case .enable: "Enable"
        case .verifyEmail: "Mark email verified"
        case .revokeSessions: "Revoke sessions"
        case .sendReset: "Send password reset"
        case .sendVerification: "Send verification mail"
        }
    }

    var notice: String {
        switch self {
        case .disable: "disabled"
        case .enable: "enabled"
        case .verifyEmail: "verified"
        case .revokeSessions: "revoked"
        case .sendReset: "reset-sent"
        case .sendVerification: "verification-sent"
        }
    }

    /// The actions that make sense for `user` now.
    static func offered(for user: UserRecord) -> [UserAction] {
        var actions: [UserAction] = [user.disabled ? .enable : .disable, .revokeSessions]
        if user.email != nil {
            if !user.emailVerified { actions += [.verifyEmail, .sendVerification] }
            actions.append(.sendReset)
        }
        return actions
    }
}

/// The switches of a scope the sign-in methods page shows.
enum ScopeSwitch: String, CaseIterable, Sendable {
    case allowPasswordSignup, enableEmailLinkSignin, enableAnonymousUser, enablePhoneSignIn, totpSecondFactors
    case phoneSecondFactors
    case disabledUserSignup, disabledUserDeletion, disableAuth

    var label: String {
        switch self {
        case .allowPasswordSignup: "Email/password sign-up"
        case .enableEmailLinkSignin: "Email link (passwordless) sign-in"
        case .enableAnonymousUser: "Anonymous sign-in"
        case .enablePhoneSignIn: "Phone (SMS code) sign-in"
        case .totpSecondFactors: "Authenticator-app (TOTP) second factors"
        case .phoneSecondFactors: "Text-message (SMS) second factors"
        case .disabledUserSignup: "Users cannot sign themselves up"
        case .disabledUserDeletion: "Users cannot delete their own account"
        case .disableAuth: "Sign-in disabled for the whole scope"
        }
    }

    var isProvider: Bool {
        [
            .allowPasswordSignup, .enableEmailLinkSignin, .enableAnonymousUser, .enablePhoneSignIn, .totpSecondFactors,
            .phoneSecondFactors,
        ].contains(self)
    }

    func get(_ settings: ScopeSettings) -> Bool {
        switch self {
        case .allowPasswordSignup: settings.allowPasswordSignup
        case .enableEmailLinkSignin: settings.enableEmailLinkSignin
        case .enableAnonymousUser: settings.enableAnonymousUser
        case .enablePhoneSignIn: settings.phoneConfig.enabled
        case .totpSecondFactors: settings.mfaConfig.enablesTOTP
        case .phoneSecondFactors: settings.mfaConfig.enablesPhone
        case .disabledUserSignup: settings.disabledUserSignup
        case .disabledUserDeletion: settings.disabledUserDeletion
        case .disableAuth: settings.disableAuth
        }
    }

    func set(_ settings: inout ScopeSettings, _ on: Bool) {
        switch self {
        case .allowPasswordSignup: settings.allowPasswordSignup = on
        case .enableEmailLinkSignin: settings.enableEmailLinkSignin = on
        case .enableAnonymousUser: settings.enableAnonymousUser = on
        case .enablePhoneSignIn: settings.phoneConfig.enabled = on
        case .totpSecondFactors:
            // On: TOTP's provider config, with the window kept or Identity Platform's 5; off: without it
            // (docs/protocol/mfa.md#turning-it-on). A switch left as it was changes nothing.
            guard on != settings.mfaConfig.enablesTOTP else { return }
            let others = (settings.mfaConfig.providerConfigs ?? []).filter { $0.totpProviderConfig == nil }
            let window = settings.mfaConfig.totpAdjacentIntervals
            settings.mfaConfig.providerConfigs =
                on
                ? others + [.init(state: "ENABLED", totpProviderConfig: .init(adjacentIntervals: window))]
                : (others.isEmpty ? nil : others)
        case .phoneSecondFactors:
            // On: `PHONE_SMS` among the enabled providers, and the state ENABLED unless it is on already
            // (MANDATORY stays); off: `PHONE_SMS` left out (docs/protocol/mfa.md#turning-it-on).
            guard on != settings.mfaConfig.enablesPhone else { return }
            var providers = settings.mfaConfig.enabledProviders.filter { $0 != "PHONE_SMS" }
            if on {
                providers.append("PHONE_SMS")
                if !["ENABLED", "MANDATORY"].contains(settings.mfaConfig.state) {
                    settings.mfaConfig.state = "ENABLED"
                }
            }
            settings.mfaConfig.enabledProviders = providers
        case .disabledUserSignup: settings.disabledUserSignup = on
        case .disabledUserDeletion: settings.disabledUserDeletion = on
        case .disableAuth: settings.disableAuth = on
        }
    }
}

extension ConsoleController {
    static var pageSize: Int { 25 }

    // MARK: Users

    @Sendable func users(_ request: Request, context: AdminContext) async throws -> Response {
        try await usersPage(request: request, context: context, scope: try await tenants.usersScope(of: context))
    }

    /// What the new-user form was sent with, and the errors to show next to its fields.
    struct NewUserForm {
        var email = ""
        var displayName = ""
        var emailVerified = false
        var errors: [String: String] = [:]
    }

    func usersPage(
        request: Request, context: AdminContext, scope: Scope, form: NewUserForm = NewUserForm(),
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let parameters = request.uri.queryParameters
        let q = parameters.get("q")?.trimmingCharacters(in: .whitespaces) ?? ""
        let provider = parameters.get("provider") ?? ""
        let show = parameters.get("show") ?? "all"
        let sort = parameters.get("sort") ?? "created-desc"
        // Bounded, so the offset cannot overflow (a trap would take the directory down).
        let pageIndex = min(max(0, parameters.get("page").flatMap { Int($0) } ?? 0), 100_000)

        var query = AccountQuery()
        if !q.isEmpty {
            query.isFiltered = true
            query.localIDs = [q]
            query.emailPrefix = Credentials.normalizedEmail(q) ?? q.lowercased()
        }
        query.provider = provider.isEmpty ? nil : provider
        query.onlyAnonymous = show == "anonymous"
        query.onlyDisabled = show == "disabled"
        query.onlyUnverified = show == "unverified"
        switch sort {
        case "created-asc": query.sortBy = .createdAt
        case "login-desc": (query.sortBy, query.descending) = (.lastLoginAt, true)
        case "login-asc": query.sortBy = .lastLoginAt
        default: (query.sortBy, query.descending) = (.createdAt, true)
        }
        query.limit = Self.pageSize
        query.offset = pageIndex * Self.pageSize
        let (count, users) = try await accounts.admin.search(query, scope: scope, logger: context.logger)

        let rows = users.map { user in
            UsersPage.Row(
                localId: user.localId, localIdPath: Self.segment(user.localId), emailText: user.email ?? "(no email)",
                providers: Self.providers(user), created: Self.time(millis: user.createdAt),
                lastSignIn: Self.time(millis: user.lastLoginAt), badges: Self.badges(user))
        }
        let here: [(String, String)] = [("q", q), ("provider", provider), ("show", show), ("sort", sort)]
        let base = Self.base(scope) + "/users?"
        let page = UsersPage(
            chrome: chrome(context, scope: scope, section: .users), notice: Self.notice(request), q: q,
            providers: Self.options(
                [
                    ("", "Any provider"), ("password", "Email/password"), ("google.com", "Google"),
                    ("apple.com", "Apple"), ("facebook.com", "Facebook"), ("github.com", "GitHub"),
                    ("microsoft.com", "Microsoft"), ("twitter.com", "Twitter"), ("yahoo.com", "Yahoo"),
                ], selected: provider),
            shows: Self.options(
                [
                    ("all", "All users"), ("anonymous", "Anonymous"), ("disabled", "Disabled"),
                    ("unverified", "Unverified email"),
                ],
                selected: show),
            sorts: Self.options(
                [
                    ("created-desc", "Newest first"), ("created-asc", "Oldest first"),
                    ("login-desc", "Last sign-in, latest first"), ("login-asc", "Last sign-in, earliest first"),
                ], selected: sort),
            countText: count == 1 ? "1 user" : "\(count) users", rows: rows,
            previous: pageIndex > 0 ? base + Self.query(here + [("page", String(pageIndex - 1))]) : nil,
            next: (pageIndex + 1) * Self.pageSize < count
                ? base + Self.query(here + [("page", String(pageIndex + 1))]) : nil,
            newEmail: form.email, newDisplayName: form.displayName, newVerified: form.emailVerified,
            emailError: form.errors["email"], passwordError: form.errors["password"],
            displayNameError: form.errors["displayName"])
        return views.render(page, status: status)
    }

    /// The new-user form: the admin API's own checks (`AdminAccountsController.checked`), its errors
    /// shown next to the field they are about.
    @Sendable func createUser(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        var request = request
        let fields = try await ConsoleSessionMiddleware.form(&request)
        var form = NewUserForm(
            email: fields["email"]?.trimmingCharacters(in: .whitespaces) ?? "",
            displayName: fields["displayName"]?.trimmingCharacters(in: .whitespaces) ?? "",
            emailVerified: fields["emailVerified"] == "on")
        let password = fields["password"] ?? ""
        do {
            guard !form.email.isEmpty else { throw FirebaseError.invalid(.missingEmail) }
            guard !password.isEmpty else { throw FirebaseError.invalid(.missingPassword) }
            let checked = try AdminAccountsController<Tenants>.checked(
                email: form.email, password: password, phoneNumber: nil,
                displayName: form.displayName.isEmpty ? nil : form.displayName, photoUrl: nil)
            var user = AdminNewUser()
            user.email = checked.email
            user.password = password
            user.displayName = form.displayName.isEmpty ? nil : form.displayName
            user.emailVerified = form.emailVerified
            let created = try await accounts.admin.create(scope: scope, user: user, logger: context.logger)
            return Self.redirect(Self.base(scope) + "/users/\(Self.segment(created.localId))?notice=created-user")
        } catch let error as FirebaseError where error.errorCode != nil {
            let code = error.errorCode!
            switch code {
            case .missingEmail, .invalidEmail: form.errors["email"] = "Enter a valid email address."
            case .emailExists: form.errors["email"] = "Another user of this scope has this address."
            case .missingPassword: form.errors["password"] = "Enter a password."
            default:
                if code.rawValue.contains("PASSWORD") {
                    form.errors["password"] = Self.words(error)
                } else {
                    form.errors["displayName"] = Self.words(error)
                }
            }
            return try await usersPage(
                request: request, context: context, scope: scope, form: form, status: .badRequest)
        }
    }

    /// An API error's message as a sentence: its detail when it has one, else its code in words.
    static func words(_ error: FirebaseError) -> String {
        let parts = error.message.components(separatedBy: " : ")
        if parts.count > 1 { return parts.dropFirst().joined(separator: " : ") }
        return parts[0].replacingOccurrences(of: "_", with: " ").lowercased().capitalizingFirst + "."
    }

    static func options(_ choices: [(String, String)], selected: String) -> [ConsoleOption] {
        choices.map { ConsoleOption(value: $0.0, label: $0.1, selected: $0.0 == selected) }
    }

    static func providers(_ user: UserRecord) -> String {
        let ids = user.providerUserInfo.map(\.providerId)
        return ids.isEmpty ? (user.isAnonymous ? "anonymous" : "—") : ids.joined(separator: ", ")
    }

    static func badges(_ user: UserRecord) -> [ConsoleBadge] {
        var badges: [ConsoleBadge] = []
        if user.disabled { badges.append(ConsoleBadge(kind: "disabled", label: "Disabled")) }
        if user.isAnonymous { badges.append(ConsoleBadge(kind: "anonymous", label: "Anonymous")) }
        if user.email != nil {
            badges.append(
                user.emailVerified
                    ? ConsoleBadge(kind: "verified", label: "Verified") : ConsoleBadge(kind: "", label: "Unverified"))
        }
        return badges
    }

    func findUser(_ context: AdminContext, scope: Scope) async throws -> UserRecord {
        // Links carry the id percent-encoded (`segment`): an imported id may hold any character.
        let raw = try context.parameters.require("localId")
        let localId = raw.removingPercentEncoding ?? raw
        guard
            let user = try await accounts.admin.lookup(
                scope: scope, localIds: [localId], emails: [], phoneNumbers: [], federated: [], logger: context.logger
            ).first
        else {
            throw FirebaseError.invalid(.userNotFound)
        }
        return user
    }

    @Sendable func user(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let user = try await findUser(context, scope: scope)
        return try await userPage(user, scope: scope, request: request, context: context)
    }

    /// What the profile form was sent with, and the errors to show next to its fields.
    struct ProfileForm {
        var displayName: String
        var email: String
        var phoneNumber: String
        var claims: String
        var errors: [String: String] = [:]

        init(_ user: UserRecord) {
            displayName = user.displayName ?? ""
            email = user.email ?? ""
            phoneNumber = user.phoneNumber ?? ""
            claims = user.customAttributes ?? ""
        }
    }

    func userPage(
        _ user: UserRecord, scope: Scope, request: Request, context: AdminContext, deleteError: String? = nil,
        profile: ProfileForm? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let sessions = try await accounts.admin.sessions(scope: scope, localId: user.localId, logger: context.logger)
        let heading = user.email ?? user.displayName ?? user.localId
        var facts: [(String, String)] = [
            ("User id", user.localId), ("Email", user.email ?? "—"),
            ("Email verified", user.emailVerified ? "yes" : "no"), ("Display name", user.displayName ?? "—"),
            ("Phone number", user.phoneNumber ?? "—"), ("Created", Self.time(millis: user.createdAt)),
            ("Last sign-in", Self.time(millis: user.lastLoginAt)),
            ("Last refresh", Self.time(millis: user.lastRefreshAt)),
            ("Password set", Self.time(millis: user.passwordUpdatedAt)),
            ("Tokens valid since", Self.time(Date(timeIntervalSince1970: Double(user.validSince)))),
            ("Custom claims", user.customAttributes ?? "—"),
        ]
        if user.customAuth == true { facts.append(("Custom-token sign-in", "yes")) }
        let rows = sessions.map { session in
            let state: String
            if let revoked = session.revokedAt {
                state = "revoked \(Self.time(revoked))" + (session.revokedReason.map { " (\($0))" } ?? "")
            } else if session.expiresAt < Date() {
                state = "ended"
            } else if session.startedAt.timeIntervalSince1970 < Double(user.validSince) {
                state = "revoked (tokens before \(Self.time(Date(timeIntervalSince1970: Double(user.validSince)))))"
            } else {
                state = "active"
            }
            return UserPage.Session(
                provider: session.secondFactor.map { "\(session.signInProvider) + \($0)" } ?? session.signInProvider,
                started: Self.time(session.startedAt),
                lastRefresh: Self.time(session.lastRefreshAt), ends: Self.time(session.expiresAt), state: state)
        }
        let form = profile ?? ProfileForm(user)
        let page = UserPage(
            chrome: chrome(context, scope: scope, section: .users), notice: Self.notice(request), heading: heading,
            localIdPath: Self.segment(user.localId), badges: Self.badges(user),
            facts: facts.map { ConsoleFact(name: $0.0, value: $0.1) },
            links: user.providerUserInfo.map {
                UserPage.Link(providerId: $0.providerId, rawId: $0.rawId, email: $0.email ?? "—")
            },
            factors: (user.mfaInfo ?? []).map { factor in
                UserPage.Factor(
                    kind: factor.totpInfo != nil ? "Authenticator app (TOTP)" : "Phone (SMS) \(factor.phoneInfo ?? "")",
                    name: factor.displayName ?? "—",
                    enrolled: Self.time(RFC3339.parse(factor.enrolledAt)), enrollmentId: factor.mfaEnrollmentId,
                    enrollmentIdPath: Self.segment(factor.mfaEnrollmentId))
            },
            sessions: rows,
            actions: UserAction.offered(for: user).map { UserPage.Action(verb: $0.rawValue, label: $0.label) },
            confirmWord: user.email ?? user.localId, deleteError: deleteError,
            profile: UserPage.Profile(
                displayName: form.displayName, email: form.email, phoneNumber: form.phoneNumber, claims: form.claims),
            errors: form.errors)
        return views.render(page, status: status)
    }

    func act(_ action: UserAction, request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let user = try await findUser(context, scope: scope)
        var change = AdminUserChange()
        switch action {
        case .disable: change.disabled = true
        case .enable: change.disabled = false
        case .verifyEmail: change.emailVerified = true
        case .revokeSessions: change.validSince = Int64(Date().timeIntervalSince1970)
        case .sendReset, .sendVerification:
            guard let email = user.email else { throw FirebaseError.invalid(.missingEmail) }
            let type: OobRequestType = action == .sendReset ? .passwordReset : .verifyEmail
            _ = try await accounts.oob.sendOobCode(
                SendOobCodeRequest(
                    scope: scope, requestType: type, email: email, localId: nil, newEmail: nil,
                    linkPrefix: try links.prefix(mode: type.mode, tenant: scope.tenantID, request: request),
                    continueUrl: nil, returnLink: false), logger: context.logger)
        }
        if action != .sendReset, action != .sendVerification {
            _ = try await accounts.admin.update(
                scope: scope, localId: user.localId, change: change, logger: context.logger)
        }
        context.logger.info(
            "console user action",
            metadata: [
                "tenant.id": .string(scope.key), "user.id": .string(user.localId), "action": .string(action.rawValue),
            ])
        return Self.redirect(Self.base(scope) + "/users/\(Self.segment(user.localId))?notice=\(action.notice)")
    }

    /// Removes one second factor (docs/protocol/mfa.md#admins): the admin API's `mfa` keeping the
    /// others, which ends the sessions signed in with it.
    @Sendable func removeFactor(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let user = try await findUser(context, scope: scope)
        let raw = try context.parameters.require("enrollmentId")
        let enrollmentId = raw.removingPercentEncoding ?? raw
        let factors = (user.mfaInfo ?? []).map(\.mfaEnrollmentId)
        guard factors.contains(enrollmentId) else { throw FirebaseError.invalid(.mfaEnrollmentNotFound) }
        var change = AdminUserChange()
        change.factors = factors.filter { $0 != enrollmentId }.map { AdminFactor(enrollmentId: $0) }
        _ = try await accounts.admin.update(scope: scope, localId: user.localId, change: change, logger: context.logger)
        context.logger.info(
            "console removed a second factor",
            metadata: [
                "tenant.id": .string(scope.key), "user.id": .string(user.localId),
                "mfa.enrollment": .string(enrollmentId),
            ])
        return Self.redirect(Self.base(scope) + "/users/\(Self.segment(user.localId))?notice=factor-removed")
    }

    /// The profile form: the admin API's own checks (`checked`, `CustomClaims.validate`); an emptied
    /// field removes the attribute, an empty password field keeps the password.
    @Sendable func updateProfile(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let user = try await findUser(context, scope: scope)
        var request = request
        let fields = try await ConsoleSessionMiddleware.form(&request)
        var form = ProfileForm(user)
        form.displayName = fields["displayName"]?.trimmingCharacters(in: .whitespaces) ?? ""
        form.email = fields["email"]?.trimmingCharacters(in: .whitespaces) ?? ""
        form.phoneNumber = fields["phoneNumber"]?.trimmingCharacters(in: .whitespaces) ?? ""
        form.claims = fields["claims"]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let password = fields["password"] ?? ""
        do {
            let checked = try AdminAccountsController<Tenants>.checked(
                email: form.email.isEmpty ? nil : form.email, password: password.isEmpty ? nil : password,
                phoneNumber: form.phoneNumber.isEmpty ? nil : form.phoneNumber,
                displayName: form.displayName.isEmpty ? nil : form.displayName, photoUrl: nil)
            var change = AdminUserChange()
            if form.displayName.isEmpty {
                change.deleteDisplayName = true
            } else {
                change.displayName = form.displayName
            }
            if let email = checked.email { change.email = email } else { change.deleteEmail = true }
            if let phone = checked.phoneNumber { change.phoneNumber = phone } else { change.deletePhoneNumber = true }
            change.customAttributes = .some(form.claims.isEmpty ? nil : try CustomClaims.validate(form.claims))
            if !password.isEmpty { change.password = password }
            _ = try await accounts.admin.update(
                scope: scope, localId: user.localId, change: change, logger: context.logger)
        } catch let error as FirebaseError where error.errorCode != nil {
            let code = error.errorCode!
            let field: String
            switch code {
            case .invalidEmail, .emailExists, .missingEmail: field = "email"
            case .invalidPhoneNumber, .phoneNumberExists: field = "phoneNumber"
            case .invalidClaims, .forbiddenClaim, .claimsTooLarge: field = "claims"
            case _ where code.rawValue.contains("PASSWORD"): field = "password"
            default: field = "displayName"
            }
            form.errors[field] =
                code == .emailExists ? "Another user of this scope has this address." : Self.words(error)
            return try await userPage(
                user, scope: scope, request: request, context: context, profile: form, status: .badRequest)
        }
        return Self.redirect(Self.base(scope) + "/users/\(Self.segment(user.localId))?notice=saved")
    }

    @Sendable func deleteUser(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let user = try await findUser(context, scope: scope)
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let word = user.email ?? user.localId
        guard form["confirm"]?.trimmingCharacters(in: .whitespaces) == word else {
            // Not audited: the middleware logs successful writes only.
            return try await userPage(
                user, scope: scope, request: request, context: context,
                deleteError: "Type \(word) exactly to delete this user.", status: .badRequest)
        }
        _ = try await accounts.admin.delete(scope: scope, localId: user.localId, logger: context.logger)
        return Self.redirect(Self.base(scope) + "/users?notice=deleted")
    }

    // MARK: Sign-in methods

    func settings(_ scope: Scope, logger: Logger) async throws -> ScopeSettings {
        guard let settings = try await tenants.get(scope, logger: logger) else {
            throw FirebaseError.invalid(.tenantNotFound)
        }
        return settings
    }

    @Sendable func methods(_ request: Request, context: AdminContext) async throws -> Response {
        try await methodsPage(request: request, context: context, scope: context.scope)
    }

    func methodsPage(
        request: Request, context: AdminContext, scope: Scope, domainsForm: (text: String, error: String)? = nil,
        smsForm: MethodsPage.SMSForm? = nil
    ) async throws -> Response {
        let settings = try await settings(scope, logger: context.logger)
        func switches(_ list: [ScopeSwitch]) -> [MethodsPage.Switch] {
            list.map { MethodsPage.Switch(name: $0.rawValue, label: $0.label, on: $0.get(settings)) }
        }
        let current = try await domains.current(logger: context.logger)
        let page = MethodsPage(
            chrome: chrome(context, scope: scope, section: .methods), notice: Self.notice(request),
            providerSwitches: switches(ScopeSwitch.allCases.filter(\.isProvider)),
            selfService: switches(ScopeSwitch.allCases.filter { !$0.isProvider }), authorizedDomains: current,
            domainsText: domainsForm?.text ?? current.joined(separator: "\n"), domainsError: domainsForm?.error,
            domainsAreDefault: try await tenants.projectConfig(logger: context.logger).1.authorizedDomains == nil,
            // The project's setting, so only on the project's page (where only project admins get).
            canEditDomains: scope.isProject, sms: smsForm ?? SMSSettingsForm.form(settings.phoneConfig))
        return views.render(page, status: domainsForm == nil && smsForm == nil ? .ok : .badRequest)
    }

    /// The project's authorized domains, one per line, checked as the admin API checks them; or back
    /// to the deployment's default.
    @Sendable func saveDomains(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        guard scope.isProject else { throw FirebaseError.notFound }
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let text = form["authorizedDomains"] ?? ""
        let useDefault = form["action"] == "default"
        let entries = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        do {
            let checked = useDefault ? nil : try ProjectConfigWire.checkDomains(entries)
            _ = try await tenants.updateProjectConfig(logger: context.logger) { _, project in
                project.authorizedDomains = checked
            }
        } catch let error as FirebaseError where error.errorCode == .invalidConfig {
            return try await methodsPage(
                request: request, context: context, scope: scope, domainsForm: (text, Self.words(error)))
        }
        context.logger.info("authorized domains updated")
        return Self.redirect(Self.base(scope) + "/sign-in-methods?notice=saved")
    }

    /// The scope's test numbers and the regions it texts (docs/protocol/phone.md#turning-it-on), checked as
    /// the admin API checks them; a refused form comes back with its text and the error by its field.
    @Sendable func saveSMSSettings(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        switch SMSSettingsForm.read(form) {
        case .refused(let page):
            return try await methodsPage(request: request, context: context, scope: scope, smsForm: page)
        case .accepted(let numbers, let regions):
            _ = try await tenants.update(scope, logger: context.logger) { settings in
                settings.phoneConfig.testPhoneNumbers = numbers
                settings.phoneConfig.smsRegionConfig = regions
            }
            context.logger.info(
                "text-message settings updated",
                metadata: ["tenant.id": .string(scope.key), "phone.test_numbers": "\(numbers.count)"])
            return Self.redirect(Self.base(scope) + "/sign-in-methods?notice=saved")
        }
    }

    @Sendable func saveMethods(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        // A checkbox that is not checked is not sent: every switch of the form is set, on or off.
        let values = ScopeSwitch.allCases.map { ($0, form[$0.rawValue] == "on") }
        _ = try await tenants.update(scope, logger: context.logger) { settings in
            for (change, on) in values { change.set(&settings, on) }
        }
        return Self.redirect(Self.base(scope) + "/sign-in-methods?notice=saved")
    }

    // MARK: Anonymous cleanup

    @Sendable func cleanupPage(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let week = 7 * 86_400
        let status = try await cleanup.status(scope: scope, logger: context.logger)
        let preview = try await cleanup.preview(scope: scope, bucketSeconds: week, logger: context.logger)
        let facts = [
            ("Automatic removal", status.enabled ? "on" : "off"),
            ("Retention", Self.days(status.retention)),
            ("Accounts scheduled", String(status.scheduled)),
            ("Last sweep", status.lastSweepTime.map(Self.time(text:)) ?? "none yet"),
            ("Removed by the last sweep", String(status.lastSweepDeleted)),
            ("Removed in all", String(status.totalDeleted)),
        ]
        let already = preview.alreadyScheduled
        let page = CleanupPage(
            chrome: chrome(context, scope: scope, section: .cleanup), notice: Self.notice(request),
            facts: facts.map { ConsoleFact(name: $0.0, value: $0.1) }, toggleValue: status.enabled ? "off" : "on",
            toggleLabel: status.enabled ? "Turn automatic removal off" : "Turn automatic removal on",
            previewText: preview.anonymousUsers == 0
                ? "This scope has no anonymous account."
                : "\(preview.anonymousUsers) anonymous accounts would be removed when due (\(already) already scheduled; "
                    + "the others fall due one retention period after removal is turned on).",
            chart: preview.buckets.isEmpty ? nil : Self.chart(preview.buckets))
        return views.render(page)
    }

    static func days(_ retention: String) -> String {
        guard let seconds = Int64(retention.dropLast()) else { return retention }
        if seconds % 86_400 == 0 { return "\(seconds / 86_400) days" }
        return "\(seconds) seconds"
    }

    /// The preview as bars: accounts falling due per week (inline SVG, drawn here).
    static func chart(_ buckets: [CleanupStore.Bucket]) -> CleanupPage.Chart {
        let shown = Array(buckets.prefix(12))
        let (width, height, top, bottom) = (720, 220, 20, 40)
        let slot = width / 12
        let highest = max(shown.map(\.count).max() ?? 1, 1)
        let bars = shown.enumerated().map { index, bucket in
            let h = Int(Double(height - top - bottom) * Double(bucket.count) / Double(highest))
            let x = index * slot + slot / 6
            let week = String(bucket.dueBefore.prefix(10))
            return CleanupPage.Bar(
                x: x, y: height - bottom - h, w: slot * 2 / 3, h: max(h, 1), labelX: x + slot / 3,
                countY: height - bottom - h - 4, axisY: height - bottom + 16, count: bucket.count,
                week: String(week.dropFirst(5)), tip: "\(bucket.count) due in the week before \(week)")
        }
        return CleanupPage.Chart(
            width: width, height: height, bars: bars,
            title: "Anonymous accounts falling due, by week (the date is the week's end)")
    }

    @Sendable func saveCleanup(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        guard let value = form["enabled"], value == "on" || value == "off" else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : enabled must be on or off")
        }
        _ = try await tenants.update(scope, logger: context.logger) { $0.autodeleteAnonymousUsers = value == "on" }
        return Self.redirect(Self.base(scope) + "/cleanup?notice=saved")
    }

    // MARK: Audit log

    @Sendable func audit(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let parameters = request.uri.queryParameters
        let actor = parameters.get("actor")?.trimmingCharacters(in: .whitespaces) ?? ""
        let action = parameters.get("action")?.trimmingCharacters(in: .whitespaces) ?? ""
        let before = parameters.get("before").flatMap { Int64($0) }
        // Filtered here, over pages of the log read newest first; at most 2,000 entries per page
        // shown, so a rare filter cannot make one request read the whole log.
        var entries: [(Int64, AdminCredentialStore.AuditEntry)] = []
        var cursor = before
        var exhausted = false
        var scanned = 0
        while entries.count < 50, !exhausted, scanned < 2_000 {
            let batch = try await credentials.auditEntries(
                scope: scope, before: cursor, limit: 200, logger: context.logger)
            exhausted = batch.count < 200
            scanned += batch.count
            cursor = batch.last?.0 ?? cursor
            entries += batch.filter {
                (actor.isEmpty || $0.1.actor == actor) && (action.isEmpty || $0.1.action.contains(action))
            }
        }
        let shown = entries.prefix(50)
        // Older entries: after the last one shown, or after the last one read when none matched.
        var older: String?
        if entries.count > 50 || !exhausted, let last = entries.count > 50 ? shown.last?.0 : cursor {
            older =
                Self.base(scope) + "/audit?"
                + Self.query([("actor", actor), ("action", action), ("before", String(last))])
        }
        let page = AuditPage(
            chrome: chrome(context, scope: scope, section: .audit), actor: actor, action: action,
            entries: shown.map {
                AuditPage.Entry(
                    time: Self.time(text: $0.1.time), actor: $0.1.actor, action: $0.1.action, target: $0.1.target,
                    requestId: $0.1.requestId)
            }, older: older)
        return views.render(page)
    }

    // MARK: Mail templates

    static func label(_ type: OobRequestType) -> String {
        switch type {
        case .verifyEmail: "Email verification"
        case .passwordReset: "Password reset"
        case .verifyAndChangeEmail: "Email change"
        case .emailSignIn: "Email link sign-in"
        case .recoverEmail: "Email change notice"
        }
    }

    @Sendable func templates(_ request: Request, context: AdminContext) async throws -> Response {
        try await templatePage(request: request, context: context, scope: context.scope)
    }

    /// Each type's subject and body, and a preview made by the code that renders the real mails
    /// (`MailTemplate.render`) with sample values.
    func templatePage(
        request: Request, context: AdminContext, scope: Scope,
        draft: (type: OobRequestType, template: MailTemplate, error: String)? = nil
    ) async throws -> Response {
        let custom = try await mailTemplates.custom(scope: scope, logger: context.logger)
        let appName = try await settings(scope, logger: context.logger).displayName
        // The types and their order are the admin API's (`MailTemplateController.types`).
        let types = MailTemplateController.types.map { type in
            let template = draft?.type == type ? draft!.template : custom[type] ?? MailTemplate.standard(type)
            let preview = template.render(
                appName: appName.isEmpty ? "Tessera" : appName,
                link: "https://app.example.com/__/auth/action?mode=\(type.mode)&oobCode=SAMPLE",
                email: "ada@example.com", newEmail: "ada.lovelace@example.com", displayName: "Ada")
            return TemplatesPage.MailType(
                type: type.rawValue, label: Self.label(type), subject: template.subject, body: template.body,
                custom: custom[type] != nil, previewSubject: preview.subject, previewBody: preview.body,
                error: draft?.type == type ? draft?.error : nil)
        }
        let page = TemplatesPage(
            chrome: chrome(context, scope: scope, section: .templates), notice: Self.notice(request), types: types)
        return views.render(page, status: draft == nil ? .ok : .badRequest)
    }

    @Sendable func saveTemplate(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let type = try MailTemplateController.type(context)
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        // Browsers send a textarea's lines with CRLF; the stored body keeps LF, as the API's.
        let template = MailTemplate(
            subject: form["subject"]?.trimmingCharacters(in: .whitespaces) ?? "",
            body: (form["body"] ?? "").replacingOccurrences(of: "\r\n", with: "\n"))
        do {
            try MailTemplateController.check(subject: template.subject, body: template.body)
        } catch let error as FirebaseError {
            return try await templatePage(
                request: request, context: context, scope: scope, draft: (type, template, Self.words(error)))
        }
        try await mailTemplates.save(template, scope: scope, type: type, logger: context.logger)
        return Self.redirect(Self.base(scope) + "/templates?notice=saved#\(type.rawValue)")
    }

    @Sendable func resetTemplate(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        try await mailTemplates.reset(
            scope: scope, type: try MailTemplateController.type(context), logger: context.logger)
        return Self.redirect(Self.base(scope) + "/templates?notice=saved")
    }

    // MARK: Admin credentials (project admins)

    @Sendable func credentialList(_ request: Request, context: AdminContext) async throws -> Response {
        try await credentialPage(request: request, context: context, scope: context.scope)
    }

    func credentialPage(
        request: Request, context: AdminContext, scope: Scope, newSecret: String? = nil, nameError: String? = nil
    ) async throws -> Response {
        let list = try await credentials.list(owner: Owner(of: scope), after: nil, limit: 200, logger: context.logger)
        let page = CredentialsPage(
            chrome: chrome(context, scope: scope, section: .credentials), notice: Self.notice(request),
            rows: list.map {
                CredentialsPage.Row(
                    id: $0.credentialId, name: $0.displayName.isEmpty ? "—" : $0.displayName,
                    created: Self.time($0.createTime))
            },
            // Shown in this answer only: it is not stored, and the page is not cached (no-store).
            newSecret: newSecret, nameError: nameError)
        return views.render(page)
    }

    @Sendable func createCredential(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let name = form["displayName"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard (1...100).contains(name.count) else {
            return try await credentialPage(
                request: request, context: context, scope: scope,
                nameError: "Give the credential a name (1-100 characters).")
        }
        let (_, secret) = try await credentials.create(
            owner: Owner(of: scope), displayName: name, logger: context.logger)
        return try await credentialPage(request: request, context: context, scope: scope, newSecret: secret)
    }

    @Sendable func revokeCredential(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let id = try context.parameters.require("credential")
        guard try await credentials.revoke(id: id, owner: Owner(of: scope), logger: context.logger) else {
            throw FirebaseError.invalid(.credentialNotFound)
        }
        return Self.redirect(Self.base(scope) + "/credentials?notice=revoked-credential")
    }

    // MARK: Service accounts (custom tokens)

    @Sendable func serviceAccountList(_ request: Request, context: AdminContext) async throws -> Response {
        try await serviceAccountPage(request: request, context: context, scope: context.scope)
    }

    func serviceAccountPage(
        request: Request, context: AdminContext, scope: Scope, created: String? = nil
    ) async throws -> Response {
        let list = try await serviceAccounts.store.list(
            owner: Owner(of: scope), after: nil, limit: 200, logger: context.logger)
        let page = ServiceAccountsPage(
            chrome: chrome(context, scope: scope, section: .serviceAccounts), notice: Self.notice(request),
            rows: list.map {
                ServiceAccountsPage.Row(
                    id: $0.accountId, name: $0.displayName.isEmpty ? "—" : $0.displayName, email: $0.clientEmail,
                    keyId: $0.privateKeyId, created: Self.time($0.createTime))
            },
            // The new account's JSON with its private key: in this answer only (no-store), never again.
            keyFile: created)
        return views.render(page)
    }

    @Sendable func createServiceAccount(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let name = String((form["displayName"] ?? "").trimmingCharacters(in: .whitespaces).prefix(100))
        let account = try await serviceAccounts.create(
            owner: Owner(of: scope), displayName: name, publicKeyPem: nil, logger: context.logger)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(account), as: UTF8.self)
        return try await serviceAccountPage(request: request, context: context, scope: scope, created: json)
    }

    @Sendable func revokeServiceAccount(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let id = try context.parameters.require("account")
        guard try await serviceAccounts.store.revoke(accountId: id, owner: Owner(of: scope), logger: context.logger)
        else { throw FirebaseError.configurationNotFound }
        return Self.redirect(Self.base(scope) + "/service-accounts?notice=revoked-account")
    }

    // MARK: Tenants (project admins)

    @Sendable func tenantList(_ request: Request, context: AdminContext) async throws -> Response {
        try await tenantPage(request: request, context: context)
    }

    func tenantPage(
        request: Request, context: AdminContext, displayName: String = "", nameError: String? = nil,
        deleteError: (tenant: String, message: String)? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let rows = try await allTenants(logger: context.logger).map {
            TenantsPage.Row(
                id: $0.scope.key, name: $0.displayName.isEmpty ? $0.scope.key : $0.displayName,
                deleteError: deleteError?.tenant == $0.scope.key ? deleteError?.message : nil)
        }
        let page = TenantsPage(
            chrome: chrome(principal: context.principal, csrf: context.consoleCSRF), notice: Self.notice(request),
            rows: rows, displayName: displayName, nameError: nameError)
        return views.render(page, status: status)
    }

    @Sendable func createTenant(_ request: Request, context: AdminContext) async throws -> Response {
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let name = form["displayName"]?.trimmingCharacters(in: .whitespaces) ?? ""
        do {
            try TenantController<Tenants>.validateDisplayName(name)
        } catch {
            return try await tenantPage(
                request: request, context: context, displayName: name,
                nameError: "4 to 20 characters: a letter first, then letters, digits and hyphens.", status: .badRequest)
        }
        let settings = ScopeSettings(
            scope: Scope(minted: TenantController<Tenants>.newTenantID(displayName: name)), displayName: name)
        let created = try await tenants.create(settings, logger: context.logger)
        return Self.redirect("/console/tenants/\(Self.segment(created.scope.key))/sign-in-methods?notice=created")
    }

    @Sendable func deleteTenant(_ request: Request, context: AdminContext) async throws -> Response {
        let tenant = try context.parameters.require("tenant")
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        guard form["confirm"]?.trimmingCharacters(in: .whitespaces) == tenant else {
            return try await tenantPage(
                request: request, context: context,
                deleteError: (tenant, "Type \(tenant) exactly to delete this tenant."), status: .badRequest)
        }
        guard try await tenants.delete(context.scope, logger: context.logger) else {
            throw FirebaseError.invalid(.tenantNotFound)
        }
        return Self.redirect("/console/tenants?notice=tenant-deleted")
    }
}

extension String {
    var capitalizingFirst: String { prefix(1).uppercased() + dropFirst() }
}

extension Response {
    /// With `Retry-After` when there is a wait to give.
    func retrying(after seconds: Int?) -> Response {
        var response = self
        if let seconds { response.headers[.retryAfter] = String(seconds) }
        return response
    }
}
