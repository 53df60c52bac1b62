/// Both path forms of every Identity Toolkit route (docs/protocol/README.md#the-surface): bare, and with the
/// Google host prefix, as the SDKs send them. Both services register their routes under each.
public let identityToolkitPrefixes = ["", "/identitytoolkit.googleapis.com"]
