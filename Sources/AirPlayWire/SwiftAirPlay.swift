/// The project as a whole.
public enum SwiftAirPlay {
    /// The release both `airplayd --version` and `airplay --version` print, and the Debian
    /// package's version (`tools/package`).
    public static let version = "0.3.0"
}
