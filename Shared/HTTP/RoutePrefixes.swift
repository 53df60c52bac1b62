/// Both path forms of every Identity Toolkit route (API.md A.1): bare, and with the Google host
/// prefix, as the SDKs send them. Both services register their routes under each.
public let identityToolkitPrefixes = ["", "/identitytoolkit.googleapis.com"]
