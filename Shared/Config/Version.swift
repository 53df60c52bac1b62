/// Tessera's release version: every binary answers it to `--version`, and `/healthz` reports it.
/// CHANGELOG.md says what each version changed.
public enum TesseraVersion {
    public static let current = "0.9.0"
}
